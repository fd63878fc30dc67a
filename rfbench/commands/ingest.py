"""``rfbench ingest widar|mmfi|files ROOT``: walk a dataset tree and write its manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from rfbench.commands._common import emit_json, guard, output_file, stdout_console
from rfbench.commands._progress import Bar

COMMAND_NAME = "ingest"
#: Problems listed per kind in the summary; the rest are counted in one line (every one is in the manifest).
LISTED_PROBLEMS = 50
_CONTEXT = {"help_option_names": ["-h", "--help"]}

ingest = typer.Typer(
    help=(
        "Walk a dataset tree and write its manifest (recordings, files with sizes and sha256, frame counts, domain "
        "metadata, problems). Problems in the tree (odd names, empty files, unknown folders, missing receivers, "
        "links leaving the tree) are listed, never fatal; a tree with no recording is an error (exit 2)."
    ),
    context_settings=_CONTEXT,
    no_args_is_help=True,
    rich_markup_mode="markdown",
)

_Out = Annotated[Path, typer.Option("--out", "-o", parser=output_file, help="Manifest file to write.")]
_Json = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout instead of tables.")]
_Force = Annotated[bool, typer.Option("--force", help="Overwrite an existing manifest.")]
_Follow = Annotated[bool, typer.Option(
    "--follow-symlinks", help="Also follow symbolic links that lead outside ROOT (recorded in the manifest). By "
                              "default such links are problems and left out.")]
_AbsRoot = Annotated[bool, typer.Option(
    "--absolute-root", help="Record ROOT as an absolute path (default: relative to the manifest's folder, so the "
                            "manifest names no one's folders).")]
_Workers = Annotated[Optional[int], typer.Option(
    "--workers", min=1, help="Threads reading and hashing files (default: every core; in a BVP tree, once the walk "
                             "has placed 8,000 files, as many reader processes, at most one per core).")]


@ingest.command("widar", context_settings=_CONTEXT)
def widar(
    root: Annotated[Path, typer.Argument(help="Widar3.0 folder holding CSI/ or BVP/ (or that folder itself).",
                                         show_default=False)],
    out: _Out = Path("manifest.json"),
    kind: Annotated[Optional[str], typer.Option(
        "--kind", help="Which release to read: csi (the receiver logs), bvp (the velocity profiles, "
                       "BVP/<date>-VS/[6-link/]<user>/*.mat) or both (ROOT holding CSI/ and BVP/: one manifest, "
                       "each recording naming its release and capture, so a capture stays on one side of a split). "
                       "Default: bvp when ROOT holds a BVP tree and no CSI tree, else csi.")] = None,
    workers: _Workers = None,
    receivers: Annotated[Optional[int], typer.Option(
        "--receivers", min=1, max=6,
        help="Receivers r1…rN every recording should have (default: every receiver seen in the tree).")] = None,
    follow_symlinks: _Follow = False,
    absolute_root: _AbsRoot = False,
    json_out: _Json = False,
    force: _Force = False,
) -> None:
    """Ingest a Widar3.0 CSI tree (`CSI/<date>/<user>/<user>-<gesture>-<location>-<orientation>-<repetition>-r<N>.dat`)
    or BVP tree (`BVP/<date>-VS/[6-link/]<user>/<user>-<g>-<l>-<o>-<r>-<parameters>-L<link>.mat`, one recording per
    file, T as frames; 20181205-VS's user2 and user3 follow the 20181205_2 and 20181205_3 gesture tables).

    The date folder gives the room (suffixed folders such as 20181205_2 included) and the gesture's name (numbers
    mean different gestures on different dates; the manifest keeps number, date and name). The receiver files
    of one recording are grouped; every file is framed (packet counts, skipped records) and hashed (sha256) in the
    same read, in parallel.
    """
    with guard():
        from rfbench._process import cheap_exit, collector_paused
        from rfbench.datasets.widar_both import ingest_widar_tree
        from rfbench.io.files import check_writable

        check_writable(out, force)
        cheap_exit()
        with Bar("ingesting", enabled=not json_out) as bar, collector_paused():
            manifest = ingest_widar_tree(root, kind, workers=workers,
                                         receivers_expected=range(1, receivers + 1) if receivers else None,
                                         follow_symlinks=follow_symlinks, progress=bar.advance, on_total=bar.start)
            manifest.write(out, force=force, absolute_root=absolute_root)
    _report(manifest, out, json_out, absolute_root)


@ingest.command("mmfi", context_settings=_CONTEXT)
def mmfi(
    root: Annotated[Path, typer.Argument(help="MM-Fi folder holding E01 … E04.", show_default=False)],
    out: _Out = Path("manifest.json"),
    verify_frames: Annotated[bool, typer.Option(
        "--verify-frames", help="Also read every WiFi frame (.mat, each bounded to 4 MiB read and inflated) and "
                                "check CSIamp is (3, 114, 10).")] = False,
    workers: _Workers = None,
    follow_symlinks: _Follow = False,
    absolute_root: _AbsRoot = False,
    json_out: _Json = False,
    force: _Force = False,
) -> None:
    """Ingest an MM-Fi tree: E0x/Syy/Azz/{wifi-csi/frameNNN.mat, ground_truth.npy}.

    One recording per E/S/A folder (id E01/S01/A01; room = environment). Checks ground_truth.npy is
    (frames, 17, 3), finite, and holds the bytes its header declares; counts WiFi frames and empty (0-byte)
    frame files; hashes every file (sha256). Needs no SciPy.
    """
    with guard():
        from rfbench.datasets import mmfi as mmfi_mod
        from rfbench.io.files import check_writable

        check_writable(out, force)
        with Bar("ingesting", enabled=not json_out) as bar:
            manifest = mmfi_mod.ingest(root, verify_frames=verify_frames, workers=workers,
                                       follow_symlinks=follow_symlinks, progress=bar.advance, on_total=bar.start)
        manifest.write(out, force=force, absolute_root=absolute_root)
    _report(manifest, out, json_out, absolute_root)


#: A template corpus's convention, as ``ingest files`` takes it (``rfbench verify`` takes the same options to
#: hold a chain to the verifier's convention).
TEMPLATE_HELP = ("Path of each file relative to ROOT with a {field} for each part that varies, e.g. "
                 "`{distance}_alldata/csi_a{activity}_{sample}.dat`. A field matches one or more characters other "
                 "than /; {{ and }} are literal braces.")
RecordingBy = Annotated[Optional[list[str]], typer.Option(
    "--recording-by", help="Fields that identify a recording (comma-separated); the other fields (e.g. a receiver) "
                           "name its files. Default: one recording per file.")]
Label = Annotated[Optional[str], typer.Option("--label", help="Field that is the class (stored as text under "
                                                               "label).")]
Subject = Annotated[Optional[str], typer.Option("--subject", help="Field that is the subject (person).")]
Location = Annotated[Optional[str], typer.Option("--location", help="Field that is the location.")]
Room = Annotated[Optional[str], typer.Option("--room", help="Field that is the room (environment).")]
Orientation = Annotated[Optional[str], typer.Option("--orientation", help="Field that is the orientation.")]
DropDuplicates = Annotated[bool, typer.Option(
    "--drop-duplicates", help="Leave out every recording holding a file whose bytes equal another file's (all "
                              "copies: which recording they belong to is unknown). Without it they are only "
                              "problems.")]


def fields_of(values: Optional[list[str]]) -> list[str]:
    """``--recording-by a,b --recording-by c`` → ``["a", "b", "c"]``; an empty name (``--recording-by ''``,
    ``a,,b``) is a ValidationError: it named no field, and was read as no option at all (one recording per
    file)."""
    from rfbench.errors import ValidationError

    out = []
    for v in values or []:
        for f in v.split(","):
            if not f.strip():
                raise ValidationError(f"--recording-by {v!r} names an empty field; give the template's field names, "
                                      "comma-separated (leave the option out for one recording per file)")
            out.append(f.strip())
    return out


@ingest.command("files", context_settings=_CONTEXT)
def files(
    root: Annotated[Path, typer.Argument(help="Folder the template's paths are relative to.", show_default=False)],
    template: Annotated[str, typer.Option("--template", "-t", show_default=False, help=TEMPLATE_HELP)],
    recording_by: RecordingBy = None,
    label: Label = None,
    subject: Subject = None,
    location: Location = None,
    room: Room = None,
    orientation: Orientation = None,
    dataset: Annotated[Optional[str], typer.Option("--dataset", help="Dataset name recorded in the manifest "
                                                                      "(default: ROOT's folder name).")] = None,
    drop_duplicates: DropDuplicates = False,
    out: _Out = Path("manifest.json"),
    workers: _Workers = None,
    follow_symlinks: _Follow = False,
    absolute_root: _AbsRoot = False,
    json_out: _Json = False,
    force: _Force = False,
) -> None:
    """Ingest any CSI corpus named by a convention, from a file-name template (Intel 5300 logs, or logs of the
    Atheros CSI Tool, ESP32-CSI-Tool, nexmon or PicoScenes, each file's format told from its bytes).

    Every file under ROOT is read with the template (files that do not match are problems); every field becomes a
    domain column (an integer only when every value is a canonical decimal); --label, --subject, --location,
    --room and --orientation name the fields with those roles. Each log is framed by the parser (valid
    packets, skipped records) and hashed (sha256) in the same read. Template rules: docs/ingest.md.
    """
    with guard():
        from rfbench.datasets import files as files_mod
        from rfbench.io.files import check_writable

        roles = {"label": label, "subject": subject, "location": location, "room": room, "orientation": orientation}
        files_mod.check_spec(template, fields_of(recording_by), roles)  # bad templates fail before the walk
        check_writable(out, force)
        with Bar("ingesting", enabled=not json_out) as bar:
            manifest = files_mod.ingest(root, template, recording_by=fields_of(recording_by), roles=roles,
                                        dataset=dataset, workers=workers, follow_symlinks=follow_symlinks,
                                        drop_duplicates=drop_duplicates, progress=bar.advance, on_total=bar.start)
        manifest.write(out, force=force, absolute_root=absolute_root)
    _report(manifest, out, json_out, absolute_root)


def _report(manifest, out: Path, json_out: bool, absolute_root: bool = False) -> None:
    summary = manifest.summary(out, absolute_root)
    values = summary.pop("values")
    if json_out:
        emit_json(summary)
        return
    from rich.markup import escape
    from rich.table import Table

    console = stdout_console()
    table = Table(title=f"rfbench ingest {manifest.dataset}" + (" [SYNTHETIC]" if manifest.synthetic else ""),
                  title_justify="left")
    table.add_column("key")
    table.add_column("values", justify="right")
    table.add_column("recordings per value")
    for key, shown in values.items():
        text = ", ".join(f"{'(none)' if v is None else v}: {n}" for v, n in shown[:12])
        text += " …" if len(shown) > 12 else ""
        table.add_row(key, str(len(shown)), escape(text))
    console.print(table)
    console.print(f"{summary['recordings']} recordings, {summary['files']} files, {summary['frames']} frames "
                  f"→ {escape(summary['manifest'])}")
    captures = summary.get("captures")
    if captures:
        console.print(f"captures: {captures['both']} in both releases, {captures['csi_only']} in the CSI release "
                      f"only, {captures['bvp_only']} in the BVP release only (a capture stays on one side of a split)")
    tree = manifest.extra.get("tree")
    if tree:
        rest = tree["files"] - tree["matched"]
        text = repr(manifest.extra["template"]["text"])
        console.print(f"{tree['matched']} of {tree['files']} file(s) match the template {escape(text)}"
                      + (f"; the other {rest} are problems" if rest else ""))
    if manifest.problems:
        counts = summary["problem_counts"]
        console.print(f"[yellow]{len(manifest.problems)} problem(s)[/] (listed in the manifest too): "
                      + escape(", ".join(f"{c['count']} {c['what']}" for c in counts)))
        if any(c["kind"] == "identical" for c in counts) and not manifest.extra.get("drop_duplicates"):
            console.print("[yellow]byte-identical files[/]: one recording under two names can sit on both sides of a "
                          "split (the test side would hold training data); --drop-duplicates leaves every copy out")
        for c in counts:
            console.print(f"{escape(c['what'])} ({c['count']}):")
            of_kind = [p for p in summary["problems"] if p["kind"] == c["kind"]]
            for p in of_kind[:LISTED_PROBLEMS]:
                console.print(f"  {escape(p['path'])}: {escape(p['reason'])}")
            if len(of_kind) > LISTED_PROBLEMS:
                console.print(f"  … and {len(of_kind) - LISTED_PROBLEMS} more (every problem is in the manifest's "
                              "'problems', and in --json)")
    else:
        console.print("no problems found")
