"""``rfbench split MANIFEST --protocol P``: a leakage-audited train/test split file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, List, Optional

import typer

from rfbench.commands._common import emit_json, fail, finite_float, guard, output_text, stdout_console
from rfbench.commands._progress import Bar


def split(
    manifest: Annotated[Path, typer.Argument(help="Manifest written by `rfbench ingest`.", show_default=False)],
    protocol: Annotated[str, typer.Option(
        "--protocol", "-p",
        help="random | in-domain | cross-subject | cross-room | cross-location | cross-orientation | "
             "leave-one-domain-out | mmfi-s1 | mmfi-s2 | mmfi-s3.", show_default=False)],
    seed: Annotated[int, typer.Option("--seed", "-s", min=0, help="Seed of the draw (random, cross-* "
                                                                  "held-out values, MM-Fi S1).")] = 0,
    out: Annotated[Optional[str], typer.Option(
        "--out", "-o", parser=output_text,
        help="Split file to write (default split.json); for leave-one-domain-out a folder that receives "
             "`split-<key>-<value>.json` per held-out value (default: .).")] = None,
    test: Annotated[Optional[List[str]], typer.Option(
        "--test", help="A value to hold out for test (repeatable), e.g. --test 3 with cross-room. For "
                       "leave-one-domain-out: only these folds.")] = None,
    test_fraction: Annotated[Optional[float], typer.Option(
        "--test-fraction", parser=finite_float(),
        help="Fraction of values (cross-*) or recordings (random) drawn for test with the seed; default 0.2.")] = None,
    domain: Annotated[Optional[str], typer.Option(
        "--domain", help="Key of leave-one-domain-out: subject, room, location, orientation, …")] = None,
    actions: Annotated[Optional[str], typer.Option(
        "--actions",
        help="MM-Fi action protocol for mmfi-s1|s2|s3: p1 (daily), p2 (rehabilitation), p3 (all).")] = None,
    allow_leaky: Annotated[bool, typer.Option(
        "--allow-leaky", help="Allow a leakage-prone protocol (random, in-domain, mmfi-s1, leave-one-domain-out "
                              "over a key other than subject, room, location, orientation or a field with one "
                              "of those roles); the split is tagged leakage_prone.")] = False,
    gestures: Annotated[Optional[str], typer.Option(
        "--gestures", help="Split only recordings of these gestures: comma-separated names, or common6 "
                           "(Widar3.0's six common gestures: Push&Pull, Sweep, Clap, Slide, Draw-O(Horizontal), "
                           "Draw-Zigzag(Horizontal)); the others are excluded.", show_default=False)] = None,
    json_out: Annotated[bool, typer.Option("--json",
                                           help="Print one JSON object on stdout instead of tables.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing split files.")] = False,
    content: Annotated[bool, typer.Option(
        "--content", help="Also fingerprint the files of both sides (whole files, Intel 5300 records, MM-Fi "
                          "frames): content shared across sides under any ids fails the audit; the findings "
                          "go into the split file's audit.content.")] = False,
    min_shared: Annotated[Optional[int], typer.Option(
        "--min-shared", help="With --content: records or frames two recordings on opposite sides must share to "
                             "count as a leak (default 1); a shared file always counts.",
        show_default=False)] = None,
) -> None:
    """Split a manifest's recordings into train and test under a protocol, audit it, and write the split file.

    Assignment is a pure function of the manifest's metadata and the seed: the same inputs give a byte-identical
    file. The audit checks that no recording and no window is on both sides and that every domain the protocol
    claims (subject, room, location, orientation) is disjoint; with --content, that no file, record or frame is on
    both sides under any name (docs/content-leakage.md). Exit 1 when the audit finds a leak (the split is
    still written, with audit.passed false, so it can be inspected); exit 2 on bad input.
    """
    with guard():
        from rfbench._process import cheap_exit, collector_paused
        from rfbench.protocols.split import write_splits

        cheap_exit()
        with Bar("fingerprinting", enabled=not json_out) as bar, collector_paused():
            written = write_splits(manifest, protocol, out, force=force, content=content, min_shared=min_shared,
                                   progress=bar.advance, on_total=bar.start, seed=seed, test=test or None,
                                   test_fraction=test_fraction, domain=domain, actions=actions,
                                   allow_leaky=allow_leaky, gestures=gestures)
    targets = [t for t, _ in written]
    outcomes = [o for _, o in written]
    failed = [(t, o) for t, o in zip(targets, outcomes) if not o.audit.passed]
    if json_out:
        emit_json({
            "splits": [{"path": str(t), "protocol": o.document["protocol"], "held_out": o.document["held_out"],
                        "train": len(o.document["train"]), "test": len(o.document["test"]),
                        "excluded": len(o.document["excluded"]), "leakage_prone": o.document["leakage_prone"],
                        "synthetic": o.document["synthetic"], "audit": o.document["audit"], "counts": o.counts}
                       for t, o in zip(targets, outcomes)],
            "passed": not failed,
        })
    else:
        for t, o in zip(targets, outcomes):
            _render(t, o)
    if failed:
        for t, o in failed:
            fail(f"{t}: {o.audit.error()}", 1)
        raise typer.Exit(1)


def _render(path: Path, outcome) -> None:
    from rich.markup import escape
    from rich.table import Table

    doc = outcome.document
    console = stdout_console()
    tags = []
    if doc["leakage_prone"]:
        tags.append("[bold yellow]LEAKAGE-PRONE[/]")
    if doc["synthetic"]:
        tags.append("[bold magenta]SYNTHETIC[/]")
    if "domain" in doc["params"]:  # values of the manifest's own key, the test side holding each of them
        present = {str(v) for v in doc["held_out"]}
    else:  # a protocol's fixed list (MM-Fi's S2 subjects, S3 environments): the values of its claimed keys
        present = {str(row["value"]) for row in outcome.counts
                   if row["key"] in doc["claims"] and (row["train"] or row["test"])}
    have = [str(v) for v in doc["held_out"] if str(v) in present]
    absent = [str(v) for v in doc["held_out"] if str(v) not in present]
    held = ", ".join(have) or "none of its held-out values"
    if absent:  # a protocol's fixed list (MM-Fi's S2 subjects): name only what the corpus has
        held += (f"; the protocol's other {len(absent)} held-out value(s), {', '.join(absent[:4])}"
                 f"{' …' if len(absent) > 4 else ''}, are not in this corpus")
    title = f"{escape(str(path))}: {doc['protocol']}" + (f" (test: {escape(held)})" if doc["held_out"] else "")
    console.print(title + ("  " + " ".join(tags) if tags else ""))  # one line, however narrow the table
    table = Table(title="recordings per value", title_justify="left")
    table.add_column("key")
    table.add_column("value", overflow="fold")
    table.add_column("train", justify="right")
    table.add_column("test", justify="right")
    last = None
    for row in outcome.counts:
        if last is not None and row["key"] != last:
            table.add_section()
        last = row["key"]
        style = "yellow" if row["train"] and row["test"] else None
        table.add_row(row["key"], escape(str(row["value"])), str(row["train"]), str(row["test"]), style=style)
    console.print(table)
    console.print(f"recordings: train {len(doc['train'])} · test {len(doc['test'])} · excluded "
                  f"{len(doc['excluded'])}; counts per value above, values on both sides in yellow")
    for check in doc["audit"]["checks"]:
        mark = "[green]PASS[/]" if check["passed"] else "[bold red]FAIL[/]"
        console.print(f"  {mark} {check['name']}: {escape(check['detail'])}")
    shared = [s for s in doc["audit"]["shared"] if s["shared"]]
    if shared:
        console.print("  not claimed, shared by both sides: " + ", ".join(
            f"{s['key']} {s['shared']}/{s['values']}" for s in shared))
    if doc["audit"].get("content") is not None:
        from rfbench.commands.audit import render_content

        render_content(console, doc["audit"]["content"], indent="  ")
    verdict = "[green]audit passed[/]" if doc["audit"]["passed"] else "[bold red]audit FAILED[/]"
    console.print(verdict + (" — leakage-prone protocol: do not compare its numbers with cross-domain ones"
                             if doc["leakage_prone"] else ""))

