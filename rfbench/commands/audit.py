"""``rfbench audit SPLIT [--manifest M] [--content]``: re-check a split for leaks; exit 1 on any."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, List, Optional

import typer

from rfbench.commands._common import emit_json, fail, guard, stdout_console
from rfbench.commands._progress import Bar


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
    content: Annotated[bool, typer.Option(
        "--content", help="Also fingerprint the files of both sides (whole files, Intel 5300 records, MM-Fi "
                          "frames) and fail on content shared across sides under any ids.")] = False,
    min_shared: Annotated[Optional[int], typer.Option(
        "--min-shared", help="With --content: records or frames two recordings on opposite sides must share to "
                             "count as a leak (default 1); a shared file always counts.",
        show_default=False)] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout instead of text.")] = False,
) -> None:
    """Re-check a split for leaks; exit 1 naming the offending groups.

    An rfbench split file is re-checked against its manifest (whose sha256 the split recorded): its sides must
    be exactly what its protocol, seed and parameters give (protocol-reproduces), no recording and no window
    may be on both sides, and every domain the protocol claims — taken from rfbench's protocol table, never from
    the file — must be disjoint, plus any --claim. A plain file is audited for recordings, windows and the
    --claim keys only. With --content, also no file, Intel 5300 record or MM-Fi frame on both sides under any
    name (docs/content-leakage.md); content repeated within one side is reported.

    Exit 0 when every check passes, 1 on any leak (naming the offending groups), 2 on bad input.
    """
    with guard():
        from rfbench.protocols.audit import audit_split

        with Bar("fingerprinting", enabled=content and not json_out) as bar:
            outcome = audit_split(split_file, manifest, claims=claim or (), content=content, min_shared=min_shared,
                                  progress=bar.advance, on_total=bar.start)
        result = outcome.result
        found = outcome.content
    payload = {"split": str(split_file), "manifest": str(outcome.manifest), "plain": outcome.plain,
               "protocol": outcome.protocol, "leakage_prone": outcome.leakage_prone, **result.to_dict()}
    if found is not None:
        payload["content"] = found.to_dict()
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
        if found is not None:
            render_content(console, found.to_dict())
        if outcome.leakage_prone:
            console.print(f"[bold yellow]protocol {escape(str(outcome.protocol))} is leakage-prone[/]")
        console.print("[green]audit passed[/]" if result.passed else "[bold red]audit FAILED[/]")
    if not result.passed:
        raise fail(str(result.error()), 1)


_SHOW_ROWS = 20


def _amount(row) -> str:
    bits = [f"{row[k]} {unit}(s)" for k, unit in (("files", "file"), ("records", "record"), ("frames", "frame"))
            if row.get(k)]
    return ", ".join(bits) or "nothing"


def _of(row, first: str, second: str) -> str:
    """"625 of 625 / 625 of 625 records": how much of each recording the shared records are."""
    for key in ("records", "frames"):
        if row.get(key) and f"{first}_{key}" in row:
            return f" ({row[key]} of {row[first + '_' + key]} / {row[key]} of {row[second + '_' + key]} {key})"
    return ""


def render_content(console, content: dict, indent: str = "") -> None:
    """One line per content leak, then a table of every content share (leaks, below the threshold, within one
    side), then the counts of what was fingerprinted."""
    from rich.markup import escape
    from rich.table import Table

    for row in content["leaks"]:
        evidence = row.get("evidence") or []
        first = evidence[0] if evidence else None
        where = f": {escape(first['train_file'])} = {escape(first['test_file'])}" if first else ""
        console.print(f"{indent}[bold red]LEAK[/] train {escape(row['train'])} and test {escape(row['test'])} "
                      f"share {_amount(row)}{_of(row, 'train', 'test')}{where}")
    for row in content["widespread"]:
        if row["leak"]:
            console.print(f"{indent}[bold red]LEAK[/] {row['side']} {escape(row['recording'])} shares "
                          f"{_amount(row)} found in more than {content['widespread_limit']} recordings, "
                          f"{row['other_side_recordings']} of them on the other side")
    for line in content_findings(content):
        console.print(f"{indent}{escape(line)}")
    rows = [("leak", r["train"], r["test"], r) for r in content["leaks"]]
    rows += [("below threshold", r["train"], r["test"], r) for r in content["below_threshold"]]
    within = content["within"]
    for side in ("train", "test"):
        rows += [(f"within {side}", r["a"], r["b"], r) for r in within[side]]
        rows += [(f"within {side}", r["recording"], "(itself)", r) for r in within[f"{side}_repeated"]]
    c = content["counts"]
    blank = c["blank"]
    if rows:
        table = Table(title="content on more than one recording", title_justify="left")
        for name, justify in (("where", "left"), ("recording", "left"), ("recording", "left"), ("files", "right"),
                              ("records", "right"), ("frames", "right")):
            table.add_column(name, justify=justify, overflow="fold")
        for kind, a, b, r in rows[:_SHOW_ROWS]:
            style = "red" if kind == "leak" else ("yellow" if kind.startswith("within") else None)
            table.add_row(kind, escape(a), escape(b), str(r["files"]), str(r["records"]), str(r["frames"]),
                          style=style)
        width = console.width
        if not console.is_terminal:  # piped: as wide as the ids need, never folded mid-name
            from rich.measure import Measurement

            console.width = max(width, Measurement.get(console, console.options.update_width(1 << 16), table).maximum)
        try:
            console.print(table)
        finally:
            console.width = width
        if len(rows) > _SHOW_ROWS:
            console.print(f"{indent}… {len(rows) - _SHOW_ROWS} more row(s) in --json")
    console.print(f"{indent}content: {c['files']} file(s), {c['records']} record(s), {c['frames']} frame(s) "
                  f"fingerprinted; not fingerprinted: {c['empty_files']} empty file(s), "
                  f"{blank['records_zero']} all-zero record(s), {blank['frames_zero']} all-zero and "
                  f"{blank['frames_non_finite']} non-finite frame(s), {c['unparsed_frames']} unparsed frame(s); "
                  f"hash matches confirmed byte for byte ({_collisions(content['confirmations'])})")


def content_findings(content: dict) -> list[str]:
    """What the content audit found, in words, and what to do about it (nothing found: no line)."""
    out = []
    for label, rows in (("across the two sides", content["leaks"] + content["below_threshold"]),
                        ("within the train side", content["within"]["train"]),
                        ("within the test side", content["within"]["test"])):
        files = [r for r in rows if r.get("files")]
        records = [r for r in rows if not r.get("files") and (r.get("records") or r.get("frames"))]
        if files:
            out.append(f"found {label}: {len(files)} pair(s) of recordings holding byte-identical files (the same "
                       "file under two names)")
        if records:
            out.append(f"found {label}: {len(records)} pair(s) of recordings sharing identical records or frames "
                       "(copied CSI inside different files)")
    repeated = content["within"]["train_repeated"] + content["within"]["test_repeated"]
    if repeated:
        out.append(f"found: {len(repeated)} recording(s) repeating records or frames of their own")
    if content["leaks"] and any(r.get("files") for r in content["leaks"]):
        out.append("to do: ingest again with --drop-duplicates (every recording holding a file identical to another "
                   "is left out: which of the names the bytes belong to is unknown), then split again")
    if content["leaks"] and any(not r.get("files") for r in content["leaks"]):
        out.append("to do: shared records are not whole files: find where the copies came from (rfbench audit "
                   "--content --json lists the evidence), remove them from the tree, then ingest and split again")
    return out


def _collisions(conf: dict) -> str:
    n = sum(v for k, v in conf.items() if k.endswith("_collisions"))
    return "no collision" if n == 0 else f"{n} hash collision(s) set aside"
