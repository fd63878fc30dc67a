"""``rfbench predict MODEL.onnx --windows DIR -o pred.npy``: run an ONNX model over a windows folder.

The run's options are the fields of :class:`rfbench.nn.predict_settings.PredictSettings`: their help, default
and bounds come from the field metadata, and the recorded argv from the same fields.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rfbench.commands._common import emit_json, guard, output_file, stdout_console, with_settings
from rfbench.commands._progress import progress
from rfbench.nn.predict_settings import PredictSettings


def _predict(
    model: Annotated[Path, typer.Argument(help="The ONNX model (.onnx, every tensor inside the file).",
                                          show_default=False)],
    windows: Annotated[Path, typer.Option("--windows", help="A folder written by `rfbench windows` (X.npy, y.npy, "
                                          "index.json).", show_default=False)],
    out: Annotated[Path, typer.Option(
        "--out", "-o", parser=output_file, help="Predictions to write (.npy); the record goes beside it with the "
                                                "suffix .json.", show_default=False)],
    force: Annotated[bool, typer.Option("--force", help="Replace existing predictions and record.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False,
    **options,
) -> None:
    """Run an ONNX model over a windows folder: pred.npy in the index's row order, and its record pred.json.

    The model is checked before anything runs: its input's rank, fixed dims and dtype against X (named and
    unset dims accepted), its output's rows against y's row shape, its flattening, or the index's class count.
    A model is untrusted code: every graph, subgraph and local function is walked, and a tensor kept in an
    external file, a custom operator domain, a local function that would shadow a runtime operator, or a random
    operator (without --allow-random) is refused. onnxruntime then runs in a child process limited to
    --memory-mb of address space, --cpu-seconds of CPU time and --timeout seconds, fed X.npy memory-mapped,
    batch by batch, without copying it; a limit hit stops the command with one line naming it.

    The record (rfbench.prediction/1) holds the model's sha256 and size, onnxruntime's version and settings,
    the CPU's instruction-set level, the index's and X's sha256, and the command line that re-runs it (paths
    relative to the record's folder).

    A classifier's scores (N, K) are read by column: column i must be class i of the index's label order
    (labels.names in index.json, the classes y.npy indexes). A model of flat feature vectors (N, features),
    such as scikit-learn's through skl2onnx, runs with --flatten. docs/bring-your-model.md has the routes.

    Needs onnxruntime: pip install 'rfbench[onnx]'. Exit 0 on success, 2 on bad input (nothing written).
    """
    with guard():
        from rfbench.io.files import check_writable, refuse_inputs, refuse_inside_tree
        from rfbench.nn import predict as P

        settings = PredictSettings.from_cli(**options)
        P._check_onnxruntime()  # the install hint before any file is read
        record_path = P.record_path_for(out)
        check_writable(out, force)
        check_writable(record_path, force)
        folder = P.open_windows(windows, check_x=False)  # predict hashes X while the model runs
        refuse_inputs([out, record_path], [model, *folder.files()])
        tree = folder.dataset_tree()
        if tree is not None:
            refuse_inside_tree([out, record_path], tree[0], parts=tree[1])
        with progress(int(folder.x.shape[0]), "predicting", enabled=not json_out) as advance:
            prediction = P.predict(model, folder, settings, advance=advance)
        record = P.write_prediction(out, prediction, force=force)
    if json_out:
        emit_json({"pred_file": str(out), "record_file": str(record_path), "rows": int(prediction.pred.shape[0]),
                   "seconds": prediction.seconds, "windows_per_second": _rate(prediction), "record": record})
        return
    from rich.markup import escape

    console = stdout_console()
    r = record
    threads = r["runtime"]["intra_op_threads"]
    n_sessions = r["runtime"]["sessions"]
    console.print(escape(
        f"{out}: {r['pred']['dtype']} {tuple(r['pred']['shape'])} ({r['output']['mode']}), record {record_path}"))
    console.print(escape(
        f"model {model} ({r['model']['bytes']} bytes, sha256 {r['model']['sha256'][:12]}…): input "
        f"{r['input']['name']!r} {r['input']['shape']}, output {r['output']['name']!r} {r['output']['shape']}"))
    console.print(escape(
        f"{r['windows']['rows']} windows in {r['batches']} batch(es) of {settings.batch_size}, "
        f"{r['copied_batches']} copied; onnxruntime {r['runtime']['version']}, {threads} thread(s) × {n_sessions} "
        f"session(s), CPU {r['cpu']['level']} (kernels {r['cpu']['mlas']})"))
    console.print(escape(f"{prediction.seconds:.3f} s, {_rate(prediction):.0f} windows/s"))
    names = (folder.index.get("labels") or {}).get("names") if isinstance(folder.index, dict) else None
    if r["output"]["mode"] == "scores" and names:
        shown = ", ".join(f"{i} {n}" for i, n in enumerate(names[:6])) + (" …" if len(names) > 6 else "")
        console.print(escape(f"score columns are the index's classes in its label order: {shown}"))


def _rate(prediction) -> float:
    return float(prediction.pred.shape[0] / prediction.seconds) if prediction.seconds > 0 else float("inf")


def predict(**values) -> None:
    _predict(**values)


with_settings(predict, _predict, PredictSettings)
