"""``rfbench windows SPLIT --side train|test|both -o DIR``: a split's model inputs, read from the dataset.

The window options are derived from the fields of :class:`rfbench.datasets.windows.WindowSettings` (their help,
bounds, choices and per-dataset defaults), never spelled here: one option per field.
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from rfbench.commands._common import emit_json, guard, stdout_console
from rfbench.commands._progress import Bar, signals_as_interrupt
from rfbench.datasets.windows.settings import WindowSettings, describe, option_name, setting_fields

COMMAND_NAME = "windows"

HELP = """Write one side of a split's model inputs (X.npy, y.npy, index.json) straight from the dataset files.

--side both writes the train side into DIR/train and the test side into DIR/test: the same files as one run per
side, the split and manifest read and re-checked once, all six files put in place only once both are complete.

The split is re-checked (its audit, its manifest's sha256) before anything is read; every dataset file read must
lie inside the manifest's dataset root, be a regular file and match the size (and sha256 where recorded) ingest
saw: otherwise one error line, exit 2, nothing written.

MM-Fi: each frameNNN.mat is a 10-packet snapshot of ground-truth row NNN-1 (matched by number). X is
(N, length, feature, 3, 114, 10) float32; y the target frame's joints in the ground truth's own dtype. Windows
holding an empty frame are dropped and counted; recordings whose ground truth is not one row per frame are
excluded and listed; non-finite CSI is refused unless --nonfinite toolbox-fill.

Intel 5300 corpora (ingest widar, ingest files): packet windows per receiver (receivers differ in packet count
and are not time-aligned; a recording of one log is one receiver), or with --resample L one row per recording,
every receiver resampled to L packets; amplitude of the raw CSI by default. Records of another shape than
--antennas are dropped one by one and listed (--odd-records); recordings missing a receiver are excluded and
listed.

Gesture labels: y holds indices into one label set, the label names of the whole manifest in natural order (or
--label-set), the same for both sides; recordings without a label are excluded.

X.npy is written in chunks (memory bounded by a few chunks of windows) to a temporary name; the three files are
renamed into place only once all are complete. index.json (rfbench.windows/1) records the split's and manifest's
sha256, every setting, one {id, start, stop} per row, the exclusions and the sha256 of every dataset file read.
"""


def _setting_parameter(f) -> inspect.Parameter:
    meta = f.metadata
    kwargs = {"help": describe(f), "show_default": False}
    if meta["type"] is int and "min" in meta:
        kwargs.update(min=meta["min"], max=meta["max"])
    annotation = Annotated[Optional[meta["type"]], typer.Option(option_name(f), **kwargs)]
    return inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)


_FIXED = [
    inspect.Parameter("split", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Annotated[Path, typer.Argument(
        help="split.json from rfbench split; its manifest names the dataset files.", show_default=False)]),
    inspect.Parameter("side", inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[str, typer.Option(
        "--side", help="Which side of the split: train, test, or both (into DIR/train and DIR/test).",
        show_default=False)]),
    inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[Path, typer.Option(
        "--out", "-o", help="Folder to write X.npy, y.npy and index.json into (created if missing).",
        show_default=False)]),
]
_TAIL = [
    inspect.Parameter("workers", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
        Optional[int], typer.Option("--workers", min=1, max=64, help="Threads reading dataset files (default: one "
                                    "per core, at most 4; a BVP side of 8,000 rows or more, or both sides with 8,000 "
                                    "together, is read by as many reader processes, at most one per core); the output "
                                    "does not depend on it.")]),
    inspect.Parameter("force", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=Annotated[
        bool, typer.Option("--force", help="Replace X.npy, y.npy and index.json if DIR holds them.")]),
    inspect.Parameter("json_out", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=Annotated[
        bool, typer.Option("--json", help="Print one JSON object on stdout instead of text.")]),
]
_SETTING_NAMES = [f.name for f in setting_fields()]


def _windows(split: Path, *, side: str, out: Path, workers=None, force: bool = False, json_out: bool = False,
             **values) -> None:
    with guard():
        from rfbench._process import cheap_exit, collector_paused, load_kernels
        from rfbench.datasets.windows import write_windows
        from rfbench.datasets.windows.api import BOTH, BOTH_SIDES
        from rfbench.errors import ValidationError

        if side not in (*BOTH_SIDES, BOTH):
            raise ValidationError(f"--side must be train, test or both, not {side!r}")
        settings = WindowSettings(**{name: values.get(name) for name in _SETTING_NAMES})
        from rfbench.protocols.splitfile import declared_dataset

        if declared_dataset(split) != "widar3-bvp":  # a BVP side parses no Intel 5300 log: no kernels to load ahead
            load_kernels()
        cheap_exit()
        bar = Bar("reading recordings", enabled=not json_out)
        with bar, signals_as_interrupt(), collector_paused():
            doc = write_windows(split, side, out, settings, force=force, workers=workers, progress=bar.advance,
                                on_total=bar.start)
    if side in BOTH_SIDES:
        _render(doc, split, Path(out), json_out)
    elif json_out:  # one object: {"train": summary, "test": summary}
        from rfbench.datasets.windows.index import summary_of

        emit_json({s: summary_of(d, split, Path(out) / s) for s, d in doc.items()})
    else:
        for s, d in doc.items():
            _render(d, split, Path(out) / s, False)


def _make_command():
    def windows(*args, **kwargs):
        return _windows(*args, **kwargs)

    params = _FIXED + [_setting_parameter(f) for f in setting_fields()] + _TAIL
    windows.__signature__ = inspect.Signature(params)
    windows.__annotations__ = {p.name: p.annotation for p in params}
    windows.__doc__ = HELP
    windows.__module__ = __name__
    return windows


windows = _make_command()


def _render(doc: dict, split: Path, out: Path, json_out: bool) -> None:
    from rfbench.datasets.windows.index import summary_of

    summary = summary_of(doc, split, out)
    if json_out:
        emit_json(summary)
        return
    from rich.markup import escape

    console = stdout_console()
    s = dict(doc["settings"])
    if s.get("label_set"):  # recorded relative to the index's folder; shown as a path from here
        s["label_set"] = os.path.normpath(out / s["label_set"])
    tag = " [SYNTHETIC]" if summary["synthetic"] else ""
    console.print(f"rfbench windows: {doc['side']} side of {escape(str(split))} ({doc['dataset']}, task "
                  f"{doc['task']}){escape(tag)}")
    shown = ", ".join(f"{k} {v}" for k, v in s.items() if v is not None and k != "task")
    console.print(f"settings   {escape(shown)}")
    rec = doc["recordings"]
    from rfbench.datasets.windows.index import dropped_summary, excluded_summary

    console.print(f"rows       {summary['rows']} from {rec['with_rows']} of {rec['side']} recordings; "
                  f"{rec['excluded']} excluded" + (f": {escape(excluded_summary(doc['excluded']))}"
                                                    if doc["excluded"] else ""))
    console.print(f"dropped    {escape(dropped_summary(doc['dropped']))}"
                  + (" (each listed in index.json)" if doc["dropped"] else ""))
    console.print(f"X.npy      float32 {tuple(doc['x']['shape'])}  ({', '.join(doc['x']['axes'])})")
    y_what = f"indices into {len(doc['labels']['names'])} labels" if doc["labels"] else "ground-truth joints"
    console.print(f"y.npy      {doc['y']['dtype']} {tuple(doc['y']['shape'])}  ({y_what})")
    mb = summary["bytes_read"] / 1e6
    console.print(f"read       {summary['files_read']} dataset files ({mb:.1f} MB), each checked against the "
                  f"manifest; their sha256 are in index.json")
    for e in doc["excluded"][:10]:
        console.print(f"  excluded {escape(e['id'])}: {escape(e['reason'])}")
    if len(doc["excluded"]) > 10:
        console.print(f"  … and {len(doc['excluded']) - 10} more (listed in index.json)")
    for note in doc["notes"]:
        if note.startswith("most records"):
            console.print(f"[yellow]note:[/] {escape(note)}")
    console.print(f"wrote {escape(str(out / 'X.npy'))}, {escape(str(out / 'y.npy'))}, "
                  f"{escape(str(out / 'index.json'))}")
