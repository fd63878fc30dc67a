"""``rfbench verify``: re-run a report's reproducer and compare every number exactly."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from rfbench.commands._common import emit_json, guard, stdout_console, verdict_output, with_settings
from rfbench.commands.ingest import DropDuplicates, Label, Location, Orientation, RecordingBy, Room, Subject, fields_of
from rfbench.report.verify import Limits

COMMAND_NAME = "verify"


def _verify(
    report: Annotated[Path, typer.Argument(help="A report.json written by rfbench score.", show_default=False)],
    root: Annotated[Optional[Path], typer.Option("--root", help="The verify root: any folder that holds "
                                                 "every file the chain reads; nothing outside it is read "
                                                 "(default: the report's folder). E.g. the demo's folder, whose "
                                                 "reports use the split beside them.")]
    = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False,
    cell: Annotated[Optional[list[str]], typer.Option("--cell", help="With a robustness summary (summary.json): "
                                                      "re-run only this cell as a report (e.g. noise-3-seed0, "
                                                      "clean); repeat for more. The cells left out are named "
                                                      "as not compared. Default: every cell.",
                                                      show_default=False)] = None,
    all_cells: Annotated[bool, typer.Option("--all", help="With a robustness summary: re-run every cell (the "
                                            "default unless --cell names some).")] = False,
    dataset: Annotated[Optional[list[Path]], typer.Option("--dataset", help="Your own copy of the dataset tree "
                                                          "(a folder under --root; repeat for more): every "
                                                          "manifest of the chain must name it, else MISMATCH. "
                                                          "Without it the re-run ingests the folder the manifest "
                                                          "names, which the verdict shows.",
                                                          show_default=False)] = None,
    template: Annotated[Optional[str], typer.Option(
        "--template", show_default=False,
        help="The file-name convention you hold a template corpus (rfbench ingest files) to, as you would ingest "
             "your copy, with --recording-by, the roles (--label, --subject, --location, --room, --orientation) "
             "and --drop-duplicates: every manifest of the chain must record exactly it, else MISMATCH. Needed "
             "with --dataset when the chain's manifest has a template (what each part of a name means is "
             "otherwise the scored party's word).")] = None,
    recording_by: RecordingBy = None,
    label: Label = None,
    subject: Subject = None,
    location: Location = None,
    room: Room = None,
    orientation: Orientation = None,
    drop_duplicates: DropDuplicates = False,
    **limit_values,
) -> None:
    """Re-run REPORT's reproducer and compare every number, hash and setting exactly.

    Nothing outside the verify root (--root: any folder holding every file the chain reads; default the
    report's folder) is read: every path — the report's inputs, the manifest a split names, the dataset files a
    manifest lists, the label set an index names, the model a prediction record names — is resolved relative to
    the file that names it, links resolved, and must be a regular file under the root, size-checked before it
    is read; each distinct file is hashed once, within --timeout (the whole command) and --max-gb. The
    reproducer must be exactly the command rfbench writes for its settings. The re-runs are the installed
    rfbench (python -I -m rfbench) in an empty temporary folder, in their own process group under --cpu-seconds
    and --memory-mb, killed if verify is stopped, and may open only the files verify checked; nothing found
    beside the report is ever imported and nothing is written beside it. Each manifest's dataset tree is
    ingested again and must give the same manifest (a manifest is not taken on its word); the verdict names
    each tree, and --dataset DIR holds the chain to your own copy of the data. The whole re-run
    report is compared with the stored one (but a short list of environment fields, docs/verify.md), and
    report.md must render from report.json. Exit 0: identical. Exit 1: an input or the dataset tree changed,
    the reproducer is not rfbench's, a re-run failed, a value differs, report.md was edited, or a manifest names
    another tree than --dataset (each difference is listed). Exit 2: the report is missing,
    unreadable or malformed, has no reproducer, or an input is missing, outside the root or not a regular
    file.
    """
    from rfbench.errors import VerificationError

    with guard():
        from rfbench.report import verify as V
        from rfbench.report.verify import Convention, rerun_guard, verify_report

        V.prepare_process(report, root)  # before numba, matplotlib or onnxruntime is imported
        limits = Limits(**limit_values)
        roles = {"label": label, "subject": subject, "location": location, "room": room, "orientation": orientation}
        convention = Convention.from_options(template, fields_of(recording_by), roles, drop_duplicates)
        try:
            with rerun_guard():
                result = verify_report(report, root=root, limits=limits, cells=tuple(cell or ()),
                                       all_cells=all_cells, datasets=tuple(dataset or ()), convention=convention)
        except VerificationError as exc:
            with verdict_output(1, end=False):
                _mismatch(report, exc, json_out)
            raise
    with verdict_output(0):
        _match(report, result, json_out)


def _match(report: Path, result, json_out: bool) -> None:
    if json_out:
        emit_json(result.to_dict())
        return
    console = stdout_console(broken_pipe=True)
    from rfbench import __version__
    from rfbench.report.verify import ENVIRONMENT

    md = f"; {result.markdown_file} renders from it" if result.markdown == "identical" else ""
    version = f" (made with rfbench {result.made_with}, re-run with {__version__})" if result.made_with else ""
    console.print(f"[bold green]MATCH[/] {_shown(report)}: {result.compared} values identical on "
                  f"re-run{version}{md}")
    _print_trees(console, result.datasets)
    for note in result.notes:
        console.print(f"[dim]note:[/] {_shown(note)}")
    for item in result.uncompared:  # the fixed environment fields are listed by --json and docs/verify.md
        if item["field"] not in ENVIRONMENT:
            console.print(f"[dim]not compared:[/] {_shown(item['field'])}: {_shown(item['why'])}")




def verify(**values) -> None:
    _verify(**values)


with_settings(verify, _verify, Limits)


def _shown(value) -> str:
    """``value`` as text within one line of the verdict, Rich markup escaped: its line breaks (a folder name, a
    report's note, a template can hold them) are written as ``\\n``, so nothing a report or a folder name says
    starts a line of its own (``--json`` keeps the real strings; other controls are shown by the console)."""
    from rich.markup import escape

    text = str(value).replace("\n", "\\n").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return escape(text)


def _print_trees(console, trees: list[dict], again: bool = True) -> None:
    """The verdict's line for each dataset tree (``again``: the chain was ingested again from it, on a match)."""
    from rfbench.report.verify import convention_text

    for t in trees:
        how = "your --dataset" if t["pinned"] else "the folder the manifest names; pin it with --dataset DIR"
        left = f", {t['left_out']} left out as problems" if t.get("left_out") else ""
        lead = "ingested again: " if again else ""
        console.print(f"dataset tree: {_shown(t['tree'])} ({lead}{t['files']} files in the manifest{left}; {how})")
        if t.get("convention") is not None:
            whose = "yours (--template)" if t.get("convention_pinned") else \
                "the scored party's; pin it with --template"
            console.print(f"  names read by: {_shown(convention_text(t['convention']))} ({whose})")


def _mismatch(report: Path, exc, json_out: bool) -> None:
    if json_out:
        emit_json({"report": str(report), "status": "mismatch", "error": str(exc), "differences": exc.differences,
                   "datasets": exc.datasets})
        return
    from rich.table import Table

    console = stdout_console(broken_pipe=True)
    if not console.is_terminal:
        console.width = 200
    table = Table(title=f"rfbench verify {_shown(report)}: MISMATCH", title_justify="left")
    table.add_column("where")
    table.add_column("in the report")
    table.add_column("on re-run")
    for d in exc.differences[:200]:
        table.add_row(_shown(d["path"]), _shown(repr(d["report"])), _shown(repr(d["rerun"])))
    console.print(table)
    if len(exc.differences) > 200:
        console.print(f"... and {len(exc.differences) - 200} more")
    _print_trees(console, exc.datasets, again=False)

