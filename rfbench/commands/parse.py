"""``rfbench parse``: Intel 5300 bfee logs to CSI archives (.npz)."""

from __future__ import annotations

import contextlib
import signal
import sys
from pathlib import Path
from typing import Annotated, List, Optional

import typer

from rfbench.commands._common import emit_json, fail, guard, progress

# Typer labels every option with its type; a flag takes no value, so it gets no label (`--scaled`, never
# `--scaled <bool>`: `--scaled true` would read `true` as an input).
_FLAG = {"metavar": ""}
_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


def parse(
    inputs: Annotated[
        List[Path],
        typer.Argument(help="bfee log files, or folders searched recursively for *.dat files (see --glob).",
                       show_default=False, metavar="INPUT"),
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
                     help="File names taken from folder inputs; repeat for several (default: *.dat). "
                          "The summary says how many other files were not taken."),
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
) -> None:
    """Parse Intel 5300 CSI logs exactly like the reference MATLAB tools, one .npz per input.

    Each archive holds plain NumPy arrays (load with numpy.load alone): csi (records, 30, Nrx, Ntx)
    complex64 (or csi_int8 with --raw-int8), the header fields timestamp_low, bfee_count, nrx, ntx, rssi_a,
    rssi_b, rssi_c, noise, agc, antenna_sel, rate, perm (records, 3, 0-based), perm_applied, csi_scaled
    with --scaled, and source_sha256 / source_bytes of the input. Corrupt records are skipped and counted by
    reason, never fatal. Inputs are independent: one that cannot be read or holds no valid record is listed
    and the exit code is 2.

    Outputs appear only complete: each is written to a hidden temporary file and renamed once on disk, in
    batches. Interrupted (Ctrl-C, SIGTERM, SIGHUP), rfbench deletes its temporary files, says which inputs
    finished, and exits 128 + the signal number; --skip-existing then finishes the rest.
    """
    with guard():
        if force and skip_existing:
            raise fail("--force and --skip-existing exclude each other: --force replaces every existing output, "
                       "--skip-existing keeps those made from the same input")
        if out is not None and out.exists() and not out.is_dir():
            raise fail(f"--out {out} exists and is not a folder")
        from rfbench.io import parse_files

        found = parse_files.find_inputs(inputs, glob or parse_files.DEFAULT_GLOBS)
        _load_kernels()
        _cheap_exit()
        options = parse_files.ParseOptions(
            out_dir=out, scaled=scaled, raw_int8=raw_int8, workers=workers,
            existing="replace" if force else ("keep-matching" if skip_existing else "refuse"))
        import threading

        cancel = threading.Event()
        with _stop_on_signals(cancel) as caught, _collector_paused(), \
                progress(len(found.files), "parsing", enabled=not json_out) as advance:
            job = parse_files.parse_many(found.files, options, progress=advance, cancel=cancel)
    files = job.files
    counts = {status: job.count(status) for status in ("written", "kept", "failed", "not finished")}
    not_taken = [str(p) for p in found.not_taken]
    if json_out:
        doc = {"files": files, "parsed": counts["written"] + counts["kept"], "written": counts["written"],
               "kept": counts["kept"], "failed": counts["failed"], "not_finished": counts["not finished"],
               "patterns": list(found.patterns), "not_taken": len(not_taken), "not_taken_files": not_taken}
        if caught:
            doc["interrupted"] = signal.Signals(caught[0]).name
        emit_json(doc)
    else:
        _render(files, counts, found)
    for r in files:
        if r["status"] == "failed":
            fail(f"{r['path']}: {r['error']}")
    if caught:
        raise fail(_interrupted_line(caught[0], files), 128 + int(caught[0]))
    if counts["failed"]:
        raise typer.Exit(2)


def _load_kernels() -> None:
    """Load the parser's compiled kernels before the job starts, without letting Numba import SciPy.

    When Numba's CPU target first starts it imports ``scipy.linalg`` only to learn whether BLAS is there for
    ``np.correlate``/``np.convolve`` (``numba.np.arraymath._HAVE_BLAS``; every other BLAS use imports it when
    compiling). The parser needs no BLAS, and that import is a large part of this command's start-up: hidden
    for that moment, the start-up took 16 % less CPU (whole-process measurement, 10 paired runs).
    """
    import sys

    from rfbench.io import intel5300

    hide = "scipy.linalg" not in sys.modules
    if hide:
        sys.modules["scipy.linalg"] = None  # an import of it raises ImportError meanwhile
    try:
        intel5300.read(b"")  # frames and unpacks nothing: loads the kernels and starts the target
    finally:
        if hide and sys.modules.get("scipy.linalg", False) is None:
            del sys.modules["scipy.linalg"]


def _cheap_exit() -> None:
    """Skip the garbage collector's passes over Numba's objects when the interpreter exits.

    At exit Python collects cyclic garbage over every tracked object, and after Numba has started that is a
    large part of a short job's time: freezing the tracked objects first (``gc.freeze``, once, from ``atexit``,
    which runs before those passes) made the process of a one-file parse take 20 % less CPU (whole-process
    measurement, 8 paired runs). It only changes what happens at exit: output is flushed and files are closed
    as before (their objects are freed by reference counting, not by the collector).
    """
    import atexit
    import gc

    if not getattr(_cheap_exit, "registered", False):
        atexit.register(gc.freeze)
        _cheap_exit.registered = True


@contextlib.contextmanager
def _collector_paused():
    """No cyclic garbage collection while the job runs (its objects are freed by reference counting): a full
    collection would traverse every object Numba created at start-up, again and again. Restored afterwards."""
    import gc

    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@contextlib.contextmanager
def _stop_on_signals(cancel):
    """While the job runs, SIGINT, SIGTERM and SIGHUP set ``cancel`` (the job then stops and cleans up)
    instead of killing the process; yields the list the first signal caught is appended to."""
    import threading

    caught: list = []
    if threading.current_thread() is not threading.main_thread():  # signals are only delivered to the main thread
        yield caught
        return

    def handler(signum, frame):
        if not caught:
            caught.append(signum)
        cancel.set()

    previous = {}
    try:
        for sig in _SIGNALS:
            previous[sig] = signal.signal(sig, handler)
        yield caught
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _spans(names: list) -> str:
    """Consecutive runs of inputs as ``first … last`` (or one name), comma-separated, at most 4 runs."""
    runs: list = []
    for k, name in names:
        if runs and runs[-1][2] == k - 1:
            runs[-1][1], runs[-1][2] = name, k
        else:
            runs.append([name, name, k])
    text = ", ".join(a if a == b else f"{a} … {b}" for a, b, _ in runs[:4])
    return text + (f" and {len(runs) - 4} more runs" if len(runs) > 4 else "")


def _interrupted_line(signum: int, files: list) -> str:
    done = [(k, f["name"]) for k, f in enumerate(files) if f["status"] != "not finished"]
    left = [(k, f["name"]) for k, f in enumerate(files) if f["status"] == "not finished"]
    name = signal.Signals(signum).name
    parts = [f"interrupted by {name}: {len(done)} of {len(files)} inputs finished"
             + (f" ({_spans(done)})" if done else "")]
    if left:
        parts.append(f"{len(left)} not finished ({_spans(left)})")
    return "; ".join(parts) + "; no temporary file left behind; re-run with --skip-existing to finish"


_COLUMNS = ("file", "records", "shapes", "skipped", "non-CSI", "span s", "Hz")


#: Up to this many inputs the table lists every one; beyond, it lists those with something to say (failed,
#: not finished, records skipped or kept unpermuted), at most this many, and a row of totals.
TABLE_ROWS = 20


def _noteworthy(r: dict) -> bool:
    s = r.get("summary") or {}
    return r["status"] in ("failed", "not finished") or any(v for v in (s.get("skipped") or {}).values())


def _total_row(files: list) -> tuple:
    """One row adding up the written inputs."""
    shapes: dict = {}
    skipped: dict = {}
    non_csi: dict = {}
    records = 0
    for r in files:
        s = r.get("summary")
        if r["status"] != "written" or not s:
            continue
        records += s["records"]
        for total, part in ((shapes, s["shapes"]), (skipped, s["skipped"]), (non_csi, s["non_csi"])):
            for k, v in part.items():
                total[k] = total.get(k, 0) + v
    written = sum(r["status"] == "written" for r in files)
    return (f"all {written} written", str(records), "\n".join(f"{k}: {v}" for k, v in sorted(shapes.items())),
            "\n".join(f"{k} {v}" for k, v in skipped.items() if v and k != "invalid_perm") or "-",
            "\n".join(f"{k}: {v}" for k, v in sorted(non_csi.items())) or "-", "", "")


def _rows(files: list) -> tuple[list, list, int]:
    """The table's rows (cells as plain text, one line per entry), the notes printed below it, and how many
    noteworthy inputs were left out of a long table."""
    rows, notes = [], []
    shown = files
    left_out = 0
    if len(files) > TABLE_ROWS:
        shown = [r for r in files if _noteworthy(r)]
        left_out = max(0, len(shown) - TABLE_ROWS)
        shown = shown[:TABLE_ROWS]
    for r in shown:
        s = r.get("summary") or {}
        if r["status"] == "kept":  # counted in the title; nothing new to show
            continue
        if r["status"] != "written":
            rows.append((r["name"], "failed" if r["status"] == "failed" else "not done", "-", "-", "-", "-", "-"))
            continue
        if s["skipped"].get("invalid_perm"):
            notes.append(f"{r['name']}: {s['skipped']['invalid_perm']} record(s) kept unpermuted (invalid_perm: "
                         "their antenna permutation is not one the reference applies)")
        rate = s.get("packet_rate_hz")
        rows.append((
            r["name"],
            str(s["records"]),
            "\n".join(f"{k}: {v}" for k, v in s["shapes"].items()),
            "\n".join(f"{k} {v}" for k, v in s["skipped"].items() if v and k != "invalid_perm") or "-",
            "\n".join(f"{k}: {v}" for k, v in s["non_csi"].items()) or "-",
            f"{s['time_span_s']:.3f}",
            f"{rate:.1f}" if rate else "-",
        ))
    if len(files) > TABLE_ROWS:
        rows.append(_total_row(files))
    return rows, notes, left_out


def _wrap_path(path: str, width: int) -> str:
    """``path`` in lines of at most ``width`` characters, broken after a ``/`` where possible."""
    lines, line = [], ""
    for part in path.replace("/", "/\0").split("\0"):
        while len(part) > width:  # a single name longer than the column
            if line:
                lines.append(line)
                line = ""
            lines.append(part[:width])
            part = part[width:]
        if len(line) + len(part) > width:
            lines.append(line)
            line = ""
        line += part
    return "\n".join(lines + [line] if line else lines)


def _plain(text: str) -> str:
    """``text`` printable on any terminal: a file name that is not valid UTF-8 shows U+FFFD, never crashes."""
    try:  # a byte of a name that is not UTF-8 (Python keeps it as a lone surrogate) becomes one U+FFFD
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _table(rows: list, width: int, totals: bool) -> list:
    """The summary table as lines: columns one space apart, sized to their content, a rule under the header
    (and above the totals row); the file's path gets the rest of the line and, when longer, breaks after a
    "/". Plain text (no Rich: this is the one output of a long job, and Rich's import and table layout cost
    more than the rest of the rendering)."""
    widths = [max(len(line) for cell in [name, *(row[k] for row in rows)] for line in cell.split("\n"))
              for k, name in enumerate(_COLUMNS)]
    room = width - sum(widths[1:]) - (len(_COLUMNS) - 1)
    widths[0] = min(widths[0], max(room, 16))
    right = [name in ("records", "span s", "Hz") for name in _COLUMNS]

    def line(cells) -> str:
        return " ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)).rstrip()

    rule = "─" * (sum(widths) + len(widths) - 1)
    out = [line(_COLUMNS), rule]
    for k, row in enumerate(rows):
        if totals and k == len(rows) - 1:
            out.append(rule)
        cells = [_wrap_path(row[0], widths[0]).split("\n"), *(cell.split("\n") for cell in row[1:])]
        for i in range(max(len(c) for c in cells)):
            out.append(line([c[i] if i < len(c) else "" for c in cells]))
    return out


def _render(files: list, counts: dict, found) -> None:
    import shutil

    head = [f"{counts['written']} written"]
    if counts["kept"]:
        head.append(f"{counts['kept']} kept (up to date)")
    if counts["failed"]:
        head.append(f"{counts['failed']} failed")
    if counts["not finished"]:
        head.append(f"{counts['not finished']} not finished")
    lines = ["rfbench parse: " + ", ".join(head)]
    rows, notes, left_out = _rows(files)
    if len(files) > TABLE_ROWS:
        lines[0] += " (inputs with something to report, then the totals; --json lists every input)"
    if rows:
        lines += _table(rows, shutil.get_terminal_size((80, 24)).columns, totals=len(files) > TABLE_ROWS)
        if left_out:
            lines.append(f"… and {left_out} more input(s) with something to report (--json lists them)")
    lines += notes
    if found.not_taken:
        more = len(found.not_taken) - 3
        shown = ", ".join(str(p) for p in found.not_taken[:3]) + (f" and {more} more" if more > 0 else "")
        lines.append(f"{len(found.not_taken)} file(s) in the folders not taken (not {' or '.join(found.patterns)}): "
                     f"{shown}; choose them with --glob PATTERN")
    written = [r for r in files if r["status"] == "written"]
    if written:
        lines.append(f"wrote {_where(written)}")
    sys.stdout.write(_plain("\n".join(lines) + "\n"))
    sys.stdout.flush()


def _where(written: list) -> str:
    """Where the archives went, in one line: the file for one, else the count and their common folder."""
    import os

    def short(path: str) -> str:  # relative to the working folder when inside it
        rel = os.path.relpath(path)
        return path if rel.startswith("..") else rel

    if len(written) == 1:
        return short(written[0]["output"])
    return f"{len(written)} archives under {short(os.path.commonpath([os.path.dirname(r['output']) for r in written]))}"
