"""``pred.npy`` and its record ``pred.json`` (``rfbench.prediction/1``): :func:`prediction_record` builds the
record of a :class:`~rfbench.nn.predict.Prediction`, :func:`write_prediction` writes both files atomically,
and :func:`load_prediction_record` reads a record back and checks that ``pred.npy`` is the array it
describes."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from rfbench import __version__
from rfbench.errors import FormatError, ValidationError
from rfbench.nn.predict_settings import PredictSettings, settings_argv, settings_from_dict
from rfbench.nn.windows_folder import _hex64, _open_npy, _plain_name, _shape

if TYPE_CHECKING:
    from rfbench.nn.predict import Prediction


# --- pred.npy and pred.json --------------------------------------------------------------------------------

def record_path_for(pred_path: str | os.PathLike) -> Path:
    """``pred.json`` for ``pred.npy``: the record sits beside the predictions with the suffix ``.json``."""
    pred_path = Path(pred_path)
    if pred_path.suffix != ".npy":
        raise ValidationError(f"predictions go to a .npy file, got {pred_path}")
    return pred_path.with_suffix(".json")


def _rel(path: Path, base: Path) -> str:
    return Path(os.path.relpath(Path(path).resolve(), base.resolve())).as_posix()


def _ref(ref: Any, folder: Path, base: Path) -> Any:
    """The index's ``{path, sha256}`` reference with its path re-based from the windows folder to ``base``."""
    if isinstance(ref, Mapping) and isinstance(ref.get("path"), str) and not Path(ref["path"]).is_absolute():
        return {**ref, "path": _rel(folder / ref["path"], base)}
    return ref


def _npy_bytes(arr: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(arr), allow_pickle=False)
    return buf.getvalue()


def prediction_record(prediction: Prediction, pred_path: str | os.PathLike, pred_bytes: bytes | None = None) -> dict:
    """The ``rfbench.prediction/1`` record of ``prediction`` written to ``pred_path``.

    Paths in it (the model, the windows folder and its index, and those in ``argv``) are relative to the
    record's folder; ``argv`` re-runs the prediction from that folder (None when X came from memory).
    """
    from rfbench.io.files import schema_id

    pred_path = Path(pred_path)
    base = pred_path.parent
    pred_bytes = pred_bytes if pred_bytes is not None else _npy_bytes(prediction.pred)
    model_rel = _rel(prediction.model.path, base)
    windows = None
    argv = None
    if prediction.windows is not None:
        w = prediction.windows
        windows = {"path": _rel(w.path, base),
                   "index": {"path": _rel(w.index_path, base), "sha256": w.index_sha256},
                   "split": _ref(w.index.get("split"), w.path, base),
                   "manifest": _ref(w.index.get("manifest"), w.path, base), "side": w.index.get("side"),
                   "task": w.index.get("task"), "rows": int(w.x.shape[0])}
        argv = ["rfbench", "predict", model_rel, "--windows", windows["path"], "-o", pred_path.name,
                *settings_argv(prediction.settings)]
    return {
        "schema": schema_id("prediction"),
        "rfbench_version": __version__,
        "model": {"path": model_rel, **prediction.model.describe()},
        "runtime": dict(prediction.runtime),
        "cpu": dict(prediction.cpu),
        "input": {**prediction.input.to_dict(), "fed": [prediction.settings.batch_size, *prediction.x["shape"][1:]]},
        "output": {**prediction.output.to_dict(), "mode": prediction.output_mode},
        "windows": windows,
        "x": dict(prediction.x),
        "settings": prediction.settings.to_dict(),
        "argv": argv,
        "batches": prediction.batches,
        "copied_batches": prediction.copied_batches,
        "padded_rows": prediction.padded_rows,
        "pred": {"file": pred_path.name, "dtype": str(prediction.pred.dtype), "shape": list(prediction.pred.shape),
                 "bytes": len(pred_bytes), "sha256": hashlib.sha256(pred_bytes).hexdigest()},
    }


def write_prediction(pred_path: str | os.PathLike, prediction: Prediction, force: bool = False) -> dict:
    """Write ``pred.npy`` and its record ``pred.json`` beside it, each atomically; return the record.

    Both targets are checked first (an existing one is refused unless ``force``); the array is written
    before the record that names its sha256, so a crash between the two leaves a record that
    :func:`load_prediction_record` refuses rather than one that vouches for the wrong array.
    """
    from rfbench.io.files import check_writable, refuse_folder_name, write_bytes, write_json

    refuse_folder_name(pred_path)
    pred_path = Path(pred_path)
    json_path = record_path_for(pred_path)
    check_writable(pred_path, force)
    check_writable(json_path, force)
    data = _npy_bytes(prediction.pred)
    record = prediction_record(prediction, pred_path, data)
    write_bytes(pred_path, data, force=force)
    write_json(json_path, record, force=force)
    return record


@dataclass(frozen=True)
class PredictionRecord:
    """A ``pred.json`` read and checked by :func:`load_prediction_record`.

    Attributes
    ----------
    path : Path
        The record.
    doc : dict
        Its content.
    pred_path : Path
        The predictions it describes (sha256 and shape checked).
    model_path : Path
        The model file, resolved against the record's folder (not opened).
    windows_path, index_path : Path or None
        The windows folder and its index, resolved likewise; None when X came from memory.
    settings : PredictSettings
    """

    path: Path
    doc: dict
    pred_path: Path
    model_path: Path
    windows_path: Path | None
    index_path: Path | None
    settings: PredictSettings

    def load_pred(self) -> np.ndarray:
        """The predictions (checked when the record was loaded)."""
        from rfbench.io.files import load_npy

        return load_npy(self.pred_path, "predictions")


_RECORD_KEYS = ("schema", "rfbench_version", "model", "runtime", "cpu", "input", "output", "windows", "x",
                "settings", "argv", "pred")


def _need(obj: Any, keys: Sequence[str], where: str) -> dict:
    if not isinstance(obj, dict):
        raise FormatError(f"{where}: expected an object")
    missing = [k for k in keys if k not in obj]
    if missing:
        raise FormatError(f"{where}: missing keys {missing}")
    return obj


def _rel_path(base: Path, value: Any, where: str) -> Path:
    if not isinstance(value, str) or not value or Path(value).is_absolute() or "\\" in value:
        raise FormatError(f"{where}: expected a path relative to the record's folder, got {value!r}")
    return base / value


def load_prediction_record(path: str | os.PathLike, *, doc: Mapping | None = None,
                           pred_bytes: bytes | None = None) -> PredictionRecord:
    """Read ``pred.json`` (or the record beside a ``pred.npy``) and check it against its ``pred.npy``.

    Checks: the schema (``rfbench.prediction/1``), every required key and its type, that ``pred.npy`` is a
    plain file name beside the record, and that the file's size, sha256, dtype and shape are the recorded
    ones. The model and the windows folder are not opened (``score`` and ``verify`` hash them as inputs).
    ``doc`` and ``pred_bytes``: the record and its predictions as the caller read them (verify, from the bytes
    it hashed), checked instead of reading the files again.

    Raises
    ------
    FormatError, SchemaError
        Unreadable or malformed record.
    ValidationError
        ``pred.npy`` is missing or is not the array the record describes.
    """
    from rfbench.io.files import check_schema, digest_read, load_npy_bytes, read_json, sha256_file

    path = Path(path)
    if path.suffix == ".npy":
        path = record_path_for(path)
    if doc is None:
        if path.exists() and not path.is_file():
            raise FormatError(f"prediction record {path}: not a regular file")
        doc = read_json(path, "prediction")
    else:
        check_schema(doc, "prediction", str(path))
    where = f"prediction record {path}"
    _need(doc, _RECORD_KEYS, where)
    base = path.parent
    model = _need(doc["model"], ("path", "sha256", "bytes"), f"{where} model")
    _hex64(model["sha256"], f"{where} model.sha256")
    runtime = _need(doc["runtime"], ("name", "version", "intra_op_threads", "sessions"), f"{where} runtime")
    cpu = _need(doc["cpu"], ("level", "mlas", "flags"), f"{where} cpu")
    for key, value in (("runtime.name", runtime["name"]), ("runtime.version", runtime["version"]),
                       ("cpu.level", cpu["level"]), ("cpu.mlas", cpu["mlas"])):
        if not isinstance(value, str):
            raise FormatError(f"{where}: {key} must be text, got {type(value).__name__}")
    if not isinstance(cpu["flags"], list) or not all(isinstance(f, str) for f in cpu["flags"]):
        raise FormatError(f"{where}: cpu.flags must be a list of CPU feature names")
    _need(doc["input"], ("name", "shape"), f"{where} input")
    _need(doc["output"], ("name", "shape", "mode"), f"{where} output")
    x = _need(doc["x"], ("sha256", "shape", "dtype"), f"{where} x")
    _hex64(x["sha256"], f"{where} x.sha256")
    settings = settings_from_dict(doc["settings"], f"{where} settings")
    argv = doc["argv"]
    if argv is not None and (not isinstance(argv, list) or not all(isinstance(a, str) for a in argv)):
        raise FormatError(f"{where}: argv must be a list of strings or null")
    windows_path = index_path = None
    if doc["windows"] is not None:
        w = _need(doc["windows"], ("path", "index"), f"{where} windows")
        idx = _need(w["index"], ("path", "sha256"), f"{where} windows.index")
        _hex64(idx["sha256"], f"{where} windows.index.sha256")
        windows_path = _rel_path(base, w["path"], f"{where} windows.path")
        index_path = _rel_path(base, idx["path"], f"{where} windows.index.path")
    pred = _need(doc["pred"], ("file", "dtype", "shape", "bytes", "sha256"), f"{where} pred")
    pred_path = base / _plain_name(pred["file"], f"{where} pred.file")
    want_shape = _shape(pred["shape"], f"{where} pred.shape")
    want_sha = _hex64(pred["sha256"], f"{where} pred.sha256")
    if pred_bytes is None:
        if not pred_path.is_file():
            raise ValidationError(f"{where}: its predictions {pred_path} are missing")
        # the bytes this command scored, when it read them (score: rfbench.io.files.reads_recorded)
        digest, size = digest_read(pred_path) or sha256_file(pred_path)
    else:
        digest, size = hashlib.sha256(pred_bytes).hexdigest(), len(pred_bytes)
    if digest != want_sha or size != pred["bytes"]:
        raise ValidationError(f"{where}: {pred_path} is not the array this record describes (sha256 or size "
                              "differs): it changed after `rfbench predict` wrote it")
    arr = _open_npy(pred_path, "predictions") if pred_bytes is None else \
        load_npy_bytes(pred_bytes, f"predictions {pred_path}")
    if arr.shape != want_shape or str(arr.dtype) != pred["dtype"]:
        raise ValidationError(f"{where}: {pred_path} is {arr.dtype} {list(arr.shape)}, the record says "
                              f"{pred['dtype']} {list(want_shape)}")
    return PredictionRecord(path=path, doc=doc, pred_path=pred_path, model_path=_rel_path(base, model["path"],
                            f"{where} model.path"), windows_path=windows_path, index_path=index_path,
                            settings=settings)
