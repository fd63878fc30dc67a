"""``rfbench generate widar|mmfi DIR`` and ``rfbench generate bfee FILE``: synthetic data, marked as such.

Thin: each command's options are derived from its settings class (:mod:`rfbench.datasets.synthetic_settings`,
:mod:`rfbench.io.writer_settings`: flag, default, bounds and help declared once); the command parses them,
calls :func:`rfbench.datasets.synthetic.make_widar_tree`, :func:`~rfbench.datasets.synthetic.make_mmfi_tree` or
:func:`rfbench.io.writer.make_bfee_log`, and renders the summary it returns.
"""

from __future__ import annotations

import contextlib
import inspect
from pathlib import Path
from typing import Annotated

import typer

from rfbench.commands._common import emit_json, guard, stdout_console
from rfbench.commands._progress import progress
from rfbench.datasets.synthetic_settings import MmfiTreeSettings, WidarTreeSettings
from rfbench.io.writer_settings import BfeeLogSettings, HardwareLogSettings
from rfbench.settings import typer_parameters

COMMAND_NAME = "generate"
_CONTEXT = {"help_option_names": ["-h", "--help"]}

generate = typer.Typer(
    help=(
        "Generate synthetic data, marked as such: a Widar3.0-like tree of bfee logs, an MM-Fi-like tree, one "
        "Intel 5300 bfee log, or one log of another CSI hardware. Deterministic by --seed. Trees carry "
        "RFBENCH_SYNTHETIC.json, so everything "
        "derived from them (manifests, splits, reports) is tagged SYNTHETIC."
    ),
    context_settings=_CONTEXT,
    no_args_is_help=True,
    rich_markup_mode="markdown",
)

_TREE_DIR = ("Folder to write: new or empty. The tree is written beside it and renamed into place, so it never "
             "holds half a tree.")
_TREE_FORCE = ("Replace a tree generated in DIR before (its RFBENCH_SYNTHETIC.json lists the files written, each "
               "with its size and sha256); a folder holding anything else (a file you added, or saved at a listed "
               "name) is refused, never written into or deleted.")


@contextlib.contextmanager
def _guard():
    """:func:`guard`, and a write that fails for lack of space (or any other OS reason) as one line too: a
    generator writes many files."""
    from rfbench.commands._progress import signals_as_interrupt

    with guard(), signals_as_interrupt():  # SIGTERM cleans up the staging folder as Ctrl-C does
        try:
            yield
        except (PermissionError, IsADirectoryError, FileNotFoundError):
            raise
        except OSError as exc:
            from rfbench.errors import RfbenchError

            where = f"{exc.filename}: " if exc.filename else ""
            raise RfbenchError(f"{where}{exc.strerror or exc}; the destination was left as it was") from None


def _signature(settings_cls, target: str, target_help: str, force_help: str) -> inspect.Signature:
    P = inspect.Parameter
    head = P(target, P.POSITIONAL_OR_KEYWORD, annotation=Annotated[Path, typer.Argument(
        help=target_help, show_default=False, metavar=target.upper())])
    tail = [
        P("force", P.KEYWORD_ONLY, default=False, annotation=Annotated[bool, typer.Option("--force",
                                                                                           help=force_help)]),
        P("json_out", P.KEYWORD_ONLY, default=False, annotation=Annotated[bool, typer.Option(
            "--json", help="Print one JSON object (what was written) on stdout instead of a line.")]),
    ]
    return inspect.Signature([head] + typer_parameters(settings_cls) + tail)


@contextlib.contextmanager
def _bar(label: str, enabled: bool):
    """``(on_total, advance)`` for the generators: a progress bar on a terminal once the total is known."""
    with contextlib.ExitStack() as stack:
        step = [lambda n=1: None]

        def on_total(total: int) -> None:
            step[0] = stack.enter_context(progress(total, label, enabled=enabled))

        yield on_total, lambda n=1: step[0](n)


def _tree_line(made) -> str:
    name = {"widar": "Widar3.0-like", "widar-bvp": "Widar3.0-like BVP", "widar-both": "Widar3.0-like CSI + BVP",
            "mmfi": "MM-Fi-like"}[made.dataset]
    kind = {"widar": "receiver logs", "widar-bvp": "velocity profiles (.mat)", "mmfi": "WiFi frames",
            "widar-both": "receiver logs and velocity profiles"}[made.dataset]
    replaced = " (replacing the tree generated there before)" if made.replaced else ""
    return (f"wrote a synthetic {name} tree to {made.root}{replaced}: {made.recordings} recordings, {made.files} "
            f"{kind}, {len(made.damage)} planted problem(s); marked SYNTHETIC")


def _render_tree(made, json_out: bool) -> None:
    if json_out:
        emit_json(made.to_dict())
    else:
        stdout_console().print(_tree_line(made), markup=False, highlight=False)


def widar(**values) -> None:
    directory, force, json_out = values.pop("dir"), values.pop("force"), values.pop("json_out")
    with _guard():
        from rfbench.datasets.synthetic import make_widar_tree

        s = WidarTreeSettings.from_cli(**values)
        with _bar("generating", not json_out) as (on_total, advance):
            if s.kind == "both":
                from rfbench.datasets.synthetic_both import make_widar_both_tree

                made = make_widar_both_tree(directory, seed=s.seed, repetitions=s.repetitions, records=s.records,
                                            frames=s.frames, damage=not s.clean, force=force, progress=advance,
                                            on_total=on_total)
            elif s.kind == "bvp":
                from rfbench.datasets.synthetic_bvp import make_widar_bvp_tree

                made = make_widar_bvp_tree(directory, seed=s.seed, repetitions=s.repetitions, frames=s.frames,
                                           damage=not s.clean, force=force, progress=advance, on_total=on_total)
            else:
                made = make_widar_tree(directory, seed=s.seed, repetitions=s.repetitions, records=s.records,
                                       damage=not s.clean, force=force, progress=advance, on_total=on_total)
    _render_tree(made, json_out)


def mmfi(**values) -> None:
    directory, force, json_out = values.pop("dir"), values.pop("force"), values.pop("json_out")
    with _guard():
        from rfbench.datasets.synthetic import make_mmfi_tree

        s = MmfiTreeSettings.from_cli(**values)
        with _bar("generating", not json_out) as (on_total, advance):
            made = make_mmfi_tree(directory, seed=s.seed, subjects=s.subjects, actions=s.actions, frames=s.frames,
                                  damage=not s.clean, force=force, progress=advance, on_total=on_total)
    _render_tree(made, json_out)


def bfee(**values) -> None:
    path, force, json_out = values.pop("file"), values.pop("force"), values.pop("json_out")
    with _guard():
        from rfbench.io.writer import make_bfee_log

        made = make_bfee_log(path, BfeeLogSettings.from_cli(**values), force=force)
    if json_out:
        emit_json(made.to_dict())
        return
    shape = "" if made.layout != "random" else f" of {made.nrx}x{made.ntx}"
    stdout_console().print(f"wrote {made.path} ({made.bytes} bytes, {made.csi_records} CSI records{shape}, "
                           f"{made.non_csi_records} non-CSI records)", markup=False, highlight=False)


def hardware(**values) -> None:
    path, force, json_out = values.pop("file"), values.pop("force"), values.pop("json_out")
    with _guard():
        from rfbench.io.writer import make_hardware_log

        made = make_hardware_log(path, HardwareLogSettings.from_cli(**values), force=force)
    if json_out:
        emit_json(made.to_dict())
        return
    stdout_console().print(f"wrote {made.path} ({made.bytes} bytes, {made.records} {made.settings.format} CSI "
                           "records, synthetic)", markup=False, highlight=False)


widar.__signature__ = _signature(WidarTreeSettings, "dir", _TREE_DIR, _TREE_FORCE)
widar.__doc__ = """Write a Widar3.0-like tree of Intel 5300 bfee logs, six receivers per recording.

Laid out as Widar3.0's CSI folder, `CSI/<date>/<user>/<user>-<gesture>-<location>-<orientation>-<repetition>-r<N>.dat`:
real bfee logs (3x1 CSI, ~1 kHz) over four date folders that cover
Widar3.0's three rooms, several users, gestures, locations and orientations. Unless --clean, the tree also
holds the problems a real download has (an empty file, odd names, an unknown date folder, a missing receiver,
a truncated and an unparseable log), which rfbench ingest reports.

With --kind bvp: Widar3.0's BVP release instead, `BVP/<date>-VS/6-link/<user>/*.mat` and (20181130-VS)
`BVP/<date>-VS/<user>/*.mat`, each holding velocity_spectrum_ro (20, 20, T) with T in --frames; user2 and user3
of 20181205-VS follow their own gesture tables. Unless --clean: a T = 0 file, odd names, an unknown gesture, a
file that is not a MAT-file, a missing and a mis-shaped variable, an empty file and an unknown date folder.
"""
mmfi.__signature__ = _signature(MmfiTreeSettings, "dir", _TREE_DIR, _TREE_FORCE)
mmfi.__doc__ = """Write an MM-Fi-like tree of WiFi frames and 3D poses.

Laid out as MM-Fi, `E0x/Syy/Azz/{ground_truth.npy, wifi-csi/frameNNN.mat}`, each subject under its MM-Fi
environment; poses (Human3.6M-17, metres) move smoothly around a standing pose
and each frame's CSIamp is a fixed, seeded linear function of that frame's pose plus noise (so a model can
learn something). Unless --clean, the tree also holds an empty frame, a ground truth of the wrong shape, a
recording without ground truth, a subject under the wrong environment and stray files.
"""
bfee.__signature__ = _signature(BfeeLogSettings, "file", "Log file to write (its folder is created); written "
                                "to a temporary name and renamed.", "Replace an existing file.")
bfee.__doc__ = """Write one Intel 5300 bfee log, by default laid out like the CSI Tool's sample_0x5_64_3000.dat.

That capture's layout: 3x1 CSI records, each followed by a non-CSI 0xC1 frame of 128 body bytes, its header
ranges and CSI shaped like a real channel (2998 records: 1,037,308 bytes). With --random: records of rounded
Gaussian CSI of the shape given. The result is a valid log for rfbench parse; damaged logs for tests are
made in Python (rfbench.io.writer.LogBuilder).
"""

hardware.__signature__ = _signature(HardwareLogSettings, "file", "Log file to write (its folder is created); "
                                    "written to a temporary name and renamed.", "Replace an existing file.")
hardware.__doc__ = """Write one CSI log of another hardware: Atheros CSI Tool, ESP32-CSI-Tool, nexmon_csi or PicoScenes.

Random CSI in the format's own layout, made by its reader (`rfbench.io.<format>.synthesize`), so that rfbench
parse, ingest and windows can be tried without a capture: Atheros CSI Tool records of 3x2 at 56 tones
(little-endian), ESP32-CSI-Tool CSI_DATA lines of 64 subcarriers, and the nexmon and PicoScenes readers'
defaults. Deterministic by --seed.
"""

for _command in (widar, mmfi, bfee, hardware):
    generate.command(_command.__name__, context_settings=_CONTEXT)(_command)
