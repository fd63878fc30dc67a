"""``rfbench parse``: Intel 5300 bfee logs to CSI archives (.npz)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated, List, Optional

import typer

from rfbench.commands._common import clean_text, fail, guard
from rfbench.commands._progress import progress, stop_on_signals

# Typer labels every option with its type; a flag takes no value, so it gets no label (`--scaled`, never
# `--scaled <bool>`: `--scaled true` would read `true` as an input).
_FLAG = {"metavar": ""}


def parse(
    inputs: Annotated[
        List[Path],
        typer.Argument(help="CSI log files, or folders searched recursively for *.dat files and for *.csv, *.pcap "
                            "and *.csi files whose first bytes are a CSI log (see --glob, --format).",
                       show_default=False),
    ],
    out: Annotated[
        Optional[Path],
        typer.Option("--out", "-o", metavar="FOLDER",
                     help="Folder for the .npz archives, mirroring the sub-folders of folder inputs "
                          "(default: beside each input)."),
    ] = None,
    glob: Annotated[
        Optional[List[str]],
        typer.Option("--glob", metavar="PATTERN",
                     help="File names taken from folder inputs; repeat for several (default: *.dat, and *.csv, "
                          "*.pcap, *.csi that are CSI logs). The summary says how many other files were not taken."),
    ] = None,
    scaled: Annotated[bool, typer.Option("--scaled", help="Also store csi_scaled (complex128, absolute units).",
                                         **_FLAG)] = False,
    raw_int8: Annotated[
        bool, typer.Option("--raw-int8", help="Store csi_int8 (records, 30, Nrx, Ntx, 2) instead of complex64 csi.",
                           **_FLAG)
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="Replace existing .npz outputs.", **_FLAG)] = False,
    skip_existing: Annotated[
        bool, typer.Option("--skip-existing", **_FLAG,
                           help="Keep an existing output made from the same input (its recorded sha256 and size "
                                "match); one made from another input is an error. Finishes an interrupted run."),
    ] = False,
    workers: Annotated[Optional[int], typer.Option("--workers", min=1, max=64, metavar="N",
                                                   help="Threads parsing files (default: every core).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout instead of tables.",
                                           **_FLAG)] = False,
    fmt: Annotated[
        Optional[str],
        typer.Option("--format", metavar="FORMAT",
                     help="Read every input as intel5300, atheros, esp32, nexmon or picoscenes (default: told from "
                          "each input's bytes). Folder inputs then take that format's files (*.dat, *.csv, *.pcap, "
                          "*.csi) unless --glob says otherwise."),
    ] = None,
    endian: Annotated[
        Optional[str],
        typer.Option("--endian", metavar="ORDER",
                     help="Byte order of Atheros logs, little or big (default: the one whose headers are "
                          "plausible)."),
    ] = None,
    chip: Annotated[
        Optional[str],
        typer.Option("--chip", metavar="CHIP",
                     help="nexmon chip (bcm4339, bcm4358, bcm43455c0, bcm4366c0) when the frames do not say it."),
    ] = None,
) -> None:
    """Parse CSI logs (Intel 5300 exactly like the reference MATLAB tools; Atheros CSI Tool, ESP32-CSI-Tool,
    nexmon_csi and PicoScenes logs, the format told from the bytes), one .npz per input.

    Each archive holds plain NumPy arrays (load with numpy.load alone): csi (records, 30, Nrx, Ntx)
    complex64 (or csi_int8 with --raw-int8), the header fields timestamp_low, bfee_count, nrx, ntx, rssi_a,
    rssi_b, rssi_c, noise, agc, antenna_sel, rate, perm (records, 3, 0-based), perm_applied, csi_scaled
    with --scaled, and source_sha256 / source_bytes of the input; another hardware's archive holds csi
    (records, subcarriers, rx, tx), num_tones, nrx, ntx, subcarriers, format, variant, chip, bandwidth_mhz,
    decided_keys / decided_values (why) and its metadata (docs/parse.md). Corrupt records are skipped and counted by
    reason, never fatal. Inputs are independent: one that cannot be read or holds no valid record is listed
    and the exit code is 2, as for a folder under an input folder that cannot be listed.

    Outputs appear only complete: each is written to a file with no name yet (or a hidden temporary file)
    and named once on disk, in batches. Interrupted (Ctrl-C, SIGTERM, SIGHUP), rfbench deletes its
    temporary files, says which inputs finished, and exits 128 + the signal number; --skip-existing then
    finishes the rest.
    """
    with contextlib.ExitStack() as signals:  # SIGINT, SIGTERM, SIGHUP caught from the job's start to the last line
        with guard():
            if force and skip_existing:
                raise fail("--force and --skip-existing exclude each other: --force replaces every existing output, "
                           "--skip-existing keeps those made from the same input")
            if out is not None and out.exists() and not out.is_dir():
                raise fail(f"--out {out} exists and is not a folder")
            from rfbench._process import cheap_exit, collector_paused, load_kernels
            from rfbench.io import parse_files

            if fmt is not None and fmt not in parse_files.FORMAT_GLOBS:
                raise fail(f"--format {fmt}: use one of {', '.join(parse_files.FORMAT_GLOBS)}")
            if endian is not None and endian not in ("little", "big"):
                raise fail(f"--endian {endian}: use little or big")
            found = parse_files.find_inputs(inputs,
                                            glob or parse_files.FORMAT_GLOBS.get(fmt, parse_files.DEFAULT_GLOBS),
                                            () if glob or fmt else parse_files.SNIFFED_GLOBS)
            load_kernels()
            cheap_exit()
            options = parse_files.ParseOptions(
                out_dir=out, scaled=scaled, raw_int8=raw_int8, workers=workers, format=fmt, endian=endian, chip=chip,
                existing="replace" if force else ("keep-matching" if skip_existing else "refuse"))
            import threading

            cancel = threading.Event()
            caught = signals.enter_context(stop_on_signals(cancel))
            with collector_paused(), progress(len(found.files), "parsing", enabled=not json_out) as advance:
                job = parse_files.parse_many(found.files, options, progress=advance, cancel=cancel)
        stopped = list(caught)  # a signal from here on waits until the summary is printed whole
        _render(job, found, json_out, stopped)
    if caught and not stopped:
        raise fail(f"{signal.Signals(caught[0]).name} arrived after every input had finished, while the "
                   f"{'JSON document' if json_out else 'summary'} was printed; it is complete",
                   128 + int(caught[0]))
    if stopped:
        from rfbench.io.parse_summary import interrupted_line

        raise fail(interrupted_line(stopped[0], [_shown_record(r) for r in job.files]), 128 + int(stopped[0]))
    if job.count("failed") or found.unlisted:
        raise typer.Exit(2)


def _render(job, found, json_out: bool, stopped: list) -> None:
    """The job's summary on stdout (a table, or one JSON document with ``--json``), then one stderr line for each
    failed input and each folder that could not be listed."""
    files = job.files
    counts = {status: job.count(status) for status in ("written", "kept", "failed", "not finished")}
    not_taken = [str(p) for p in found.not_taken]
    if json_out:
        doc = {"files": files, "parsed": counts["written"] + counts["kept"], "written": counts["written"],
               "kept": counts["kept"], "failed": counts["failed"], "not_finished": counts["not finished"],
               "patterns": list(found.patterns), "sniffed_patterns": list(found.sniffed), "not_taken": len(not_taken),
               "not_taken_files": not_taken,
               "unlisted_folders": [{"path": str(f), "reason": why} for f, why in found.unlisted]}
        if stopped:
            doc["interrupted"] = signal.Signals(stopped[0]).name
        from rfbench.io.files import dumps_json

        _print_whole(dumps_json(doc))  # emit_json's document, written whole
    else:
        from rfbench.io.parse_summary import plain, summary_lines

        shown = [_shown_record(r) for r in files]
        lines = summary_lines(shown, counts, replace(found, not_taken=[_cell(str(p)) for p in found.not_taken],
                                                    unlisted=[(_cell(str(f)), why) for f, why in found.unlisted]),
                              shutil.get_terminal_size((80, 24)).columns)
        _print_whole(clean_text(plain("\n".join(lines) + "\n")))
    for r in files:
        if r["status"] == "failed":
            fail(f"{_cell(r['path'])}: {_cell(r['error'])}")
    for folder, why in found.unlisted:
        fail(f"{_cell(str(folder))}: cannot list this folder ({why}); its files were not searched")


def _print_whole(text: str) -> None:
    """Write ``text`` on stdout whole, with one ``os.write`` loop on its descriptor: a signal caught meanwhile (its
    handler returns) does not cut it short, as it cut a buffered ``sys.stdout.write`` of more than a pipe holds
    (the rest of the text was lost). A stdout with no descriptor (a test's) is written as usual."""
    out = sys.stdout
    try:
        fd = out.fileno()
    except (AttributeError, OSError, ValueError):  # (io.UnsupportedOperation is both)
        out.write(text)
        out.flush()
        return
    out.flush()
    data = memoryview(text.encode(out.encoding or "utf-8", out.errors or "strict"))
    while data:
        data = data[os.write(fd, data):]


def _cell(text: str) -> str:
    """A file name (or a text naming one) as the terminal shows it, on one line: :func:`clean_text`'s escapes
    and also line breaks, carriage returns and tabs as ``\\xNN``, so a name is one cell of one row of the table;
    a byte that is not UTF-8 shows U+FFFD, as in the rest of the summary."""
    from rfbench.io.parse_summary import plain

    return clean_text(plain(text)).translate(_LINE_CONTROLS)


_LINE_CONTROLS = {ord(c): f"\\x{ord(c):02x}" for c in "\t\n\r"}


def _shown_record(r: dict) -> dict:
    """An input's record with the names the summary prints (``name``, ``path``, ``output``) as :func:`_cell`
    shows them; the files and ``--json`` keep the real names."""
    return {**r, **{k: _cell(r[k]) for k in ("name", "path", "output") if isinstance(r.get(k), str)}}
