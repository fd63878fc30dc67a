"""Run an ONNX model over a windows folder: predictions in the index's row order, and the record of the run.

:func:`predict` is the unit of work: it reads and checks the model (:mod:`rfbench.nn.onnx_file`: size
first, no external data, no custom operators), checks its input against ``X`` and its output against
``y``'s row shape or the index's class count, then feeds ``X`` to onnxruntime batch by batch and returns a
:class:`Prediction`. :func:`write_prediction` writes ``pred.npy`` and its record ``pred.json``
(``rfbench.prediction/1``) atomically; :func:`load_prediction_record` reads a record back and checks that
``pred.npy`` is the array it describes; :func:`compare_predictions` is the comparison ``verify`` uses when it
re-runs a prediction.

The input is not copied where ``X`` is C-contiguous and of the model's input dtype: a memory-mapped
``X.npy`` is fed as views of the mapping, one batch at a time, and onnxruntime wraps each view's memory
without copying it. Only a non-contiguous ``X`` is copied (one batch at a time), and only a final partial
batch of a model with a fixed batch dimension is padded (a copy of that batch).

Determinism: onnxruntime's CPU kernels (MLAS) pick their code path from the CPU's instruction set at run
time (SSE2, AVX, AVX2/FMA3, AVX-512; VNNI and AMX for 8-bit integer work), and a different version may
change kernels or graph optimisations. With the same model, onnxruntime version, settings (batch size,
threads) and instruction-set tier, a run reproduces bit for bit; the record holds all four, and
:func:`compare_predictions` demands identical bits when they agree and the record's tolerance otherwise.
Thread settings are explicit (1 intra-op thread by default, never "all cores"), inter-op parallelism is
off (sequential execution) and the pool does not spin.

onnxruntime is an optional dependency (``pip install 'rfbench[onnx]'``), imported only when a model runs.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from rfbench import __version__
from rfbench.errors import FormatError, MissingDependencyError, ValidationError, VerificationError
from rfbench.nn.onnx_file import ModelFile, TensorInfo, load_model
from rfbench.nn.predict_settings import PredictSettings, settings_argv, settings_from_dict

__all__ = [
    "PredictSettings", "settings_argv", "settings_from_dict", "WindowsFolder", "open_windows", "Prediction",
    "predict", "prediction_record", "write_prediction", "record_path_for", "PredictionRecord",
    "load_prediction_record", "PredictionComparison", "compare_predictions", "cpu_isa", "onnxruntime_version",
    "INSTALL_HINT",
]

INSTALL_HINT = "pip install 'rfbench[onnx]'"
_PROVIDERS = ["CPUExecutionProvider"]


# --- the CPU, as onnxruntime's kernels see it ------------------------------------------------------------

# x86-64 micro-architecture levels (the x86-64 psABI), as Linux /proc/cpuinfo names the flags.
_X86_LEVELS = (
    ("x86-64-v2", ("cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3")),
    ("x86-64-v3", ("avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave")),
    ("x86-64-v4", ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")),
)
# The features onnxruntime's MLAS dispatch tests (onnxruntime/core/mlas/lib/platform.cpp): its float kernels
# go SSE2 → AVX → AVX2+FMA3 → AVX-512F → AVX-512 core (BW/DQ/VL); 8-bit integer kernels also use VNNI and AMX.
_MLAS_FLAGS = ("sse4_1", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512dq", "avx512vl",
               "avx_vnni", "avx512_vnni", "avx_vnni_int8", "avx_ne_convert", "amx_tile", "amx_int8", "amx_bf16")


def _mlas_tier(flags: set) -> str:
    """The float-kernel tier MLAS dispatches to, from the same tests it makes (on the OS-enabled flags)."""
    if {"avx512f", "avx2", "fma"} <= flags:
        return "avx512core" if {"avx512bw", "avx512dq", "avx512vl"} <= flags else "avx512f"
    if {"avx2", "fma"} <= flags:
        return "avx2-fma3"
    if "avx" in flags:
        return "avx"
    return "sse2"


def cpu_isa(cpuinfo: str | None = None, machine: str | None = None) -> dict:
    """The CPU's instruction-set level as recorded in ``pred.json``.

    Read from Linux's ``/proc/cpuinfo`` ``flags`` line, which lists only the features the kernel has enabled
    (AVX-512 is absent when the OS does not save its registers): the x86-64 psABI level (``x86-64-v1`` …
    ``x86-64-v4``), the float-kernel tier onnxruntime's MLAS picks from the same features (``sse2``,
    ``avx``, ``avx2-fma3``, ``avx512f``, ``avx512core``), and the MLAS-relevant flags present. Two runs
    reproduce bit for bit only on equal ``level``, ``mlas`` and ``flags``.

    Parameters
    ----------
    cpuinfo : str, optional
        The text of ``/proc/cpuinfo`` (read when not given). Unreadable (another OS): level ``"unknown"``.
    machine : str, optional
        ``platform.machine()`` unless given.
    """
    machine = machine or platform.machine()
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
                cpuinfo = fh.read(1 << 20)
        except OSError:
            cpuinfo = ""
    flags = set()
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("flags", "Features"):
            flags = set(value.split())
            break
    out = {"machine": machine, "source": "/proc/cpuinfo flags", "level": "unknown", "mlas": "unknown", "flags": []}
    if not flags:
        return out
    if machine.lower() in ("x86_64", "amd64"):
        level = "x86-64-v1"
        for name, needed in _X86_LEVELS:
            if not set(needed) <= flags:
                break
            level = name
        out.update(level=level, mlas=_mlas_tier(flags), flags=sorted(flags & set(_MLAS_FLAGS)))
    else:
        out.update(level=machine, mlas=machine, flags=sorted(flags))
    return out


def _onnxruntime():
    try:
        import onnxruntime
    except ImportError:
        raise MissingDependencyError(f"running an ONNX model needs onnxruntime, which is not installed: "
                                     f"{INSTALL_HINT}") from None
    return onnxruntime


def onnxruntime_version() -> str:
    """The installed onnxruntime's version (:class:`MissingDependencyError` when it is not installed)."""
    return _onnxruntime().__version__


# --- the windows folder -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class WindowsFolder:
    """A windows folder opened by :func:`open_windows`: ``X`` memory-mapped, the index checked.

    Attributes
    ----------
    path : Path
        The folder.
    index : dict
        ``index.json`` as read.
    index_sha256 : str
        sha256 of the ``index.json`` bytes that were parsed.
    x : numpy.ndarray
        ``X.npy``, memory-mapped read-only.
    x_path : Path
        ``X.npy``.
    x_sha256 : str or None
        sha256 of ``X.npy``, checked equal to the index's; None when :func:`open_windows` was asked to leave
        the check to :func:`predict` (which hashes X while the model runs).
    target_shape : tuple
        Row shape of ``y.npy``: ``(K, 2|3)`` joints for pose, ``()`` for labels.
    target_kind : str
        ``"pose"`` or ``"label"``.
    n_classes : int or None
        Size of the index's label set (gesture), else None.
    """

    path: Path
    index: dict
    index_sha256: str
    x: np.ndarray
    x_path: Path
    x_sha256: str | None
    target_shape: tuple
    target_kind: str
    n_classes: int | None

    @property
    def axes(self) -> tuple:
        return tuple(self.index["x"]["axes"])

    @property
    def index_path(self) -> Path:
        return self.path / "index.json"


def _plain_name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value or value in (".", "..") or "/" in value or "\\" in value:
        raise FormatError(f"{where}: expected a plain file name inside the folder, got {value!r}")
    return value


def _shape(value: Any, where: str) -> tuple:
    if not isinstance(value, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                              for d in value):
        raise FormatError(f"{where}: expected a list of non-negative integers, got {value!r}")
    return tuple(value)


def _hex64(value: Any, where: str) -> str:
    if not isinstance(value, str) or not re.fullmatch(r"[0-9a-f]{64}", value):
        raise FormatError(f"{where}: expected a sha256 hex digest, got {value!r}")
    return value


def _open_npy(path: Path, what: str) -> np.ndarray:
    if path.exists() and not path.is_file():  # a FIFO or a device would block or never end
        raise FormatError(f"{what} {path}: not a regular file")
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        raise FormatError(f"{what} {path}: no such file") from None
    except (ValueError, OSError, EOFError) as exc:
        raise FormatError(f"{what} {path}: not a plain .npy array ({exc})") from None
    if not isinstance(arr, np.ndarray):
        raise FormatError(f"{what} {path}: expected a .npy array")
    return arr


def _same_dtype(actual: np.dtype, recorded) -> bool:
    """Whether an array's dtype is the one an index records (by name, ``float64``, or by code, ``<f8``)."""
    try:
        return isinstance(recorded, str) and np.dtype(recorded) == actual
    except TypeError:
        return False


def open_windows(folder: str | os.PathLike, check_x: bool = True) -> WindowsFolder:
    """Open a folder written by ``rfbench windows``: check ``index.json``, map ``X.npy``, check its sha256.

    Parameters
    ----------
    folder : path-like
    check_x : bool
        Hash ``X.npy`` now and compare with the index. False leaves it to :func:`predict`, which hashes X on
        another thread while the model runs and refuses a mismatch before returning.

    Raises
    ------
    FormatError, SchemaError
        A missing or malformed index, or arrays that do not match it.
    ValidationError
        ``X.npy`` is not the file the index describes (size or sha256).
    """
    import json

    from rfbench.io.files import check_schema, read_input_bytes, sha256_file

    folder = Path(folder)
    if not folder.is_dir():
        raise FormatError(f"windows folder {folder}: no such folder" if not folder.exists()
                          else f"windows folder {folder}: not a folder")
    index_path = folder / "index.json"
    if index_path.exists() and not index_path.is_file():
        raise FormatError(f"windows index {index_path}: not a regular file")
    raw = read_input_bytes(index_path, "windows index")
    try:
        index = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FormatError(f"windows index {index_path}: not valid JSON ({exc})") from None
    where = f"windows index {index_path}"
    if not isinstance(index, dict):
        raise FormatError(f"{where}: expected a JSON object")
    check_schema(index, "windows", where)
    for key in ("x", "y", "rows", "task"):
        if key not in index:
            raise FormatError(f"{where}: missing key {key!r}")
    xd, yd = index["x"], index["y"]
    if not isinstance(xd, dict) or not isinstance(yd, dict):
        raise FormatError(f"{where}: 'x' and 'y' must be objects")
    x_shape = _shape(xd.get("shape"), f"{where} x.shape")
    y_shape = _shape(yd.get("shape"), f"{where} y.shape")
    axes = xd.get("axes")
    if not isinstance(axes, list) or len(axes) != len(x_shape) or not all(isinstance(a, str) for a in axes):
        raise FormatError(f"{where}: x.axes must name each of X's {len(x_shape)} axes")
    if not x_shape or not y_shape or x_shape[0] != y_shape[0]:
        raise FormatError(f"{where}: X {list(x_shape)} and y {list(y_shape)} must have the same number of rows")
    if not isinstance(index["rows"], list) or len(index["rows"]) != x_shape[0]:
        raise FormatError(f"{where}: 'rows' must list one entry per row of X ({x_shape[0]})")
    kind = yd.get("kind")
    task = index["task"]
    if (task, kind) not in (("pose", "pose"), ("gesture", "label")):
        raise FormatError(f"{where}: task {task!r} with y.kind {kind!r}; expected pose/pose or gesture/label")
    n_classes = None
    labels = index.get("labels")
    if labels is not None:
        names = labels.get("names") if isinstance(labels, dict) else None
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            raise FormatError(f"{where}: labels.names must be a non-empty list of names")
        n_classes = len(names)
    if kind == "label" and n_classes is None:
        raise FormatError(f"{where}: a gesture index needs its label set ('labels')")
    x_sha = _hex64(xd.get("sha256"), f"{where} x.sha256")

    x_path = folder / _plain_name(xd.get("file"), f"{where} x.file")
    x = _open_npy(x_path, "windows X")
    if x.shape != x_shape or not _same_dtype(x.dtype, xd.get("dtype")):
        raise FormatError(f"windows X {x_path}: {x.dtype} {list(x.shape)}, but the index says "
                          f"{xd.get('dtype')} {list(x_shape)}")
    if isinstance(xd.get("bytes"), int) and x_path.stat().st_size != xd["bytes"]:
        raise ValidationError(_x_changed(x_path))
    digest = None
    if check_x:
        digest = sha256_file(x_path)[0]
        if digest != x_sha:
            raise ValidationError(_x_changed(x_path))
    y_path = folder / _plain_name(yd.get("file"), f"{where} y.file")
    y = _open_npy(y_path, "windows y")
    if y.shape != y_shape or not _same_dtype(y.dtype, yd.get("dtype")):
        raise FormatError(f"windows y {y_path}: {y.dtype} {list(y.shape)}, but the index says "
                          f"{yd.get('dtype')} {list(y_shape)}")
    del y
    return WindowsFolder(path=folder, index=index, index_sha256=hashlib.sha256(raw).hexdigest(), x=x,
                         x_path=x_path, x_sha256=digest, target_shape=y_shape[1:], target_kind=kind,
                         n_classes=n_classes)


def _x_changed(x_path: Path) -> str:
    return (f"windows X {x_path}: changed since `rfbench windows` wrote it (sha256 or size differs from the "
            "index); write the windows again")


class _Hasher(threading.Thread):
    """sha256 of a file, or of an array's C-order bytes, on its own thread: hashlib releases the GIL on large
    blocks, so it runs beside onnxruntime, which releases it too."""

    def __init__(self, source: Path | np.ndarray):
        super().__init__(daemon=True)
        self.source = source
        self.digest = None
        self.error = None

    def run(self):
        from rfbench.io.files import sha256_file

        try:
            if isinstance(self.source, np.ndarray):
                self.digest = _array_sha256(self.source)
            else:
                self.digest = sha256_file(self.source)[0]
        except OSError as exc:
            self.error = exc


# --- checking the model against the data -------------------------------------------------------------------

@dataclass(frozen=True)
class _Plan:
    input: TensorInfo
    output: TensorInfo
    batch_rows: int          # rows per call
    fixed_batch: bool        # the model's batch dimension is static
    allowed: dict            # output row shape -> mode
    out_dtype: np.dtype


def _axis_name(axes, i) -> str:
    return f"axis {i} ({axes[i]})" if axes and i < len(axes) else f"axis {i}"


def _pick(kind: str, items: Sequence[TensorInfo], name: str | None, where: str, feeds: bool) -> TensorInfo:
    names = [t.name for t in items]
    if name is not None:
        if name not in names:
            raise ValidationError(f"{where}: has no {kind} {name!r}; its {kind}s are {', '.join(map(repr, names))}")
        chosen = items[names.index(name)]
    elif len(items) > 1:
        raise ValidationError(f"{where}: has {len(items)} {kind}s ({', '.join(map(repr, names))}); name the one "
                              f"{'X feeds' if feeds else 'to write as predictions'} (the {kind} name setting)")
    else:
        chosen = items[0]
    if feeds and len(items) > 1:
        rest = [n for n in names if n != chosen.name]
        raise ValidationError(f"{where}: {kind}s {', '.join(map(repr, rest))} would get no data: rfbench feeds X to "
                              "one input; give the others initializers or export a one-input model")
    return chosen


def _float_kind(dtype: np.dtype) -> bool:
    return np.issubdtype(dtype, np.floating)


def _check_model(model: ModelFile, x_shape: tuple, x_dtype: np.dtype, axes, settings: PredictSettings,
                 target_shape: tuple | None, target_kind: str | None, n_classes: int | None) -> _Plan:
    where = f"model {model.path}"
    inp = _pick("input", model.inputs, settings.input_name, where, feeds=True)
    out = _pick("output", model.outputs, settings.output_name, where, feeds=False)
    for role, t in (("input", inp), ("output", out)):
        if t.kind != "tensor":
            raise ValidationError(f"{where}: {role} {t.name!r} is a {t.kind}, not a tensor")
    if inp.dtype != str(x_dtype):
        raise ValidationError(f"{where}: input {inp.name!r} is {inp.type_name} but X is {x_dtype}; export the model "
                              f"with a {x_dtype} input")
    fixed_batch = False
    batch_rows = settings.batch_size
    if inp.dims is not None:
        if len(inp.dims) != len(x_shape):
            raise ValidationError(f"{where}: input {inp.name!r} has rank {len(inp.dims)} {inp.shape_text()} but X "
                                  f"has rank {len(x_shape)} {list(x_shape)}")
        for i, d in enumerate(inp.dims):
            if not isinstance(d, int):
                continue
            if d <= 0:
                raise ValidationError(f"{where}: input {inp.name!r} declares dimension {d} on "
                                      f"{_axis_name(axes, i)} {inp.shape_text()}; a fixed dimension must be >= 1 "
                                      "(a dynamic one is named or left unset)")
            if i == 0:
                if d != settings.batch_size:
                    raise ValidationError(f"{where}: input {inp.name!r} has a fixed batch of {d} rows "
                                          f"{inp.shape_text()}; set the batch size to {d}")
                fixed_batch = True
            elif d != x_shape[i]:
                raise ValidationError(f"{where}: input {inp.name!r} expects {d} on {_axis_name(axes, i)} "
                                      f"{inp.shape_text()} but X has {x_shape[i]} {list(x_shape)}")
    if out.dtype is None or out.dtype in ("bool", "complex64", "complex128"):
        raise ValidationError(f"{where}: output {out.name!r} is {out.type_name}; predictions must be real numbers")
    out_dtype = np.dtype(out.dtype)

    allowed: dict = {}
    if n_classes is not None:
        allowed[(n_classes,)] = "scores"
    if target_shape is not None:
        allowed.setdefault(tuple(target_shape), "target")
        allowed.setdefault((int(np.prod(target_shape, dtype=np.int64)),), "flattened")
    if out.dims is not None:
        for i, d in enumerate(out.dims):
            if isinstance(d, int) and d <= 0:
                raise ValidationError(f"{where}: output {out.name!r} declares dimension {d} on axis {i} "
                                      f"{out.shape_text()}; a fixed dimension must be >= 1")
        if not out.dims:
            raise ValidationError(f"{where}: output {out.name!r} is a scalar; predictions need one row per window")
        if allowed and not any(_fits(out.dims[1:], shape) for shape in allowed):
            raise ValidationError(f"{where}: output {out.name!r} has rows of shape {_row_text(out.dims[1:])}, "
                                  f"expected {_expected_text(allowed, target_kind)}")
    for shape, mode in list(allowed.items()):
        if not _dtype_fits(mode, target_kind, out_dtype):
            del allowed[shape]
    if target_shape is not None or n_classes is not None:
        if not allowed or (out.dims is not None and not any(_fits(out.dims[1:], s) for s in allowed)):
            want = "integer class labels or float scores" if target_kind == "label" else "floating-point joints"
            raise ValidationError(f"{where}: output {out.name!r} is {out.type_name}; expected {want}")
    return _Plan(inp, out, batch_rows, fixed_batch, allowed, out_dtype)


def _dtype_fits(mode: str, target_kind: str | None, dtype: np.dtype) -> bool:
    if mode == "scores" or target_kind == "pose":
        return _float_kind(dtype)
    if target_kind == "label":
        return np.issubdtype(dtype, np.integer)
    return True


def _fits(dims: Sequence, shape: tuple) -> bool:
    return len(dims) == len(shape) and all(not isinstance(d, int) or d == s for d, s in zip(dims, shape))


def _row_text(dims) -> str:
    inner = ", ".join("?" if not isinstance(d, int) else str(d) for d in dims)
    return "(" + inner + ("," if len(dims) == 1 else "") + ")"


def _expected_text(allowed: dict, target_kind: str | None) -> str:
    words = {"target": "y's row shape", "flattened": "its flattening", "scores": "the class count"}
    return ", ".join(f"{_row_text(s)} ({words[m]})" for s, m in allowed.items())


# --- running --------------------------------------------------------------------------------------------------

def _first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:400] + ("…" if len(text) > 400 else "")


def _session_options(ort, settings: PredictSettings):
    so = ort.SessionOptions()
    so.intra_op_num_threads = settings.intra_op_threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 4  # fatal only: onnxruntime's own log lines would go straight to stderr; its errors
    # reach the caller as exceptions, turned into one line each
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.add_session_config_entry("session.inter_op.allow_spinning", "0")
    so.add_session_config_entry("session.load_model_format", "ONNX")
    return so


def _make_session(ort, model: ModelFile, settings: PredictSettings):
    """One onnxruntime session over the model's bytes (never its path: what runs is what was hashed)."""
    try:
        return ort.InferenceSession(model.data, sess_options=_session_options(ort, settings), providers=_PROVIDERS)
    except Exception as exc:  # onnxruntime raises its own exception types from C++
        raise ValidationError(f"model {model.path}: onnxruntime cannot load it: {_first_line(exc)}") from None


def _runtime_record(ort, settings: PredictSettings) -> dict:
    return {"name": "onnxruntime", "version": ort.__version__, "providers": list(_PROVIDERS),
            "graph_optimization": "ORT_ENABLE_ALL", "execution_mode": "ORT_SEQUENTIAL",
            "intra_op_threads": settings.intra_op_threads, "inter_op_threads": 1, "sessions": settings.sessions,
            "spinning": False}


@dataclass
class Prediction:
    """What :func:`predict` returns: the predictions and everything :func:`prediction_record` records.

    Attributes
    ----------
    pred : numpy.ndarray
        One row per row of X, in X's (the index's) order: ``(N, *y row shape)``, or ``(N, classes)`` scores.
    model : ModelFile
    windows : WindowsFolder or None
        None when X was given as an array.
    settings : PredictSettings
    input, output : TensorInfo
        The model input fed and the output written.
    output_mode : str
        ``"target"`` (rows already in y's shape), ``"flattened"`` (reshaped to y's row shape), ``"scores"``
        (one score per class) or ``"as-is"`` (no target given).
    x : dict
        ``sha256``, ``shape``, ``dtype``, ``axes`` of X.
    runtime, cpu : dict
        onnxruntime's version and settings; :func:`cpu_isa`.
    batches, copied_batches, padded_rows : int
        onnxruntime calls; batches fed through a copy (non-contiguous X, padded final batch); padding rows.
    seconds : float
        Wall-clock time of the inference loop (not recorded in ``pred.json``).
    """

    pred: np.ndarray
    model: ModelFile
    windows: WindowsFolder | None
    settings: PredictSettings
    input: TensorInfo
    output: TensorInfo
    output_mode: str
    x: dict
    runtime: dict
    cpu: dict
    batches: int
    copied_batches: int
    padded_rows: int
    seconds: float


class _Runner:
    """Feeds X to the sessions batch by batch and places each output in ``pred``."""

    def __init__(self, sessions, x: np.ndarray, plan: _Plan, target_shape, where: str,
                 advance: Callable[[int], None], run_options=None):
        self.sessions = sessions
        self.run_options = run_options
        self.x = x
        self.plan = plan
        self.target_shape = target_shape
        self.where = where
        self.advance = advance
        self.n = x.shape[0]
        self.starts = list(range(0, self.n, plan.batch_rows))
        self.contiguous = bool(x.flags.c_contiguous)
        self.pred = None
        self.row_shape = None
        self.mode = None
        self.copied = 0
        self.padded = 0
        self.lock = threading.Lock()
        self.failed = threading.Event()

    def batch(self, start: int):
        stop = min(start + self.plan.batch_rows, self.n)
        view = self.x[start:stop]
        copied = False
        if self.plan.fixed_batch and stop - start < self.plan.batch_rows:
            padded = np.zeros((self.plan.batch_rows,) + self.x.shape[1:], dtype=self.x.dtype)
            padded[:stop - start] = view
            view, copied = padded, True
        elif not self.contiguous:
            view, copied = np.ascontiguousarray(view), True
        return stop, view, copied

    def run_one(self, session, start: int):
        stop, feed, copied = self.batch(start)
        try:
            (out,) = session.run([self.plan.output.name], {self.plan.input.name: feed}, self.run_options)
        except Exception as exc:
            raise ValidationError(f"{self.where}: onnxruntime failed on rows {start}-{stop - 1}: "
                                  f"{_first_line(exc)}") from None
        out = np.asarray(out)
        rows = stop - start
        if out.ndim < 1 or out.shape[0] != feed.shape[0]:
            raise ValidationError(f"{self.where}: output {self.plan.output.name!r} has shape {list(out.shape)} for a "
                                  f"batch of {feed.shape[0]} rows; it must give one row per input row")
        if out.dtype != self.plan.out_dtype:
            raise ValidationError(f"{self.where}: output {self.plan.output.name!r} is {out.dtype}, but the model "
                                  f"declares {self.plan.out_dtype}")
        row = tuple(out.shape[1:])
        if self.row_shape is None:
            self._first(row)
        elif row != self.row_shape:
            raise ValidationError(f"{self.where}: output {self.plan.output.name!r} rows changed shape from "
                                  f"{self.row_shape} to {row} between batches")
        block = out[:rows]
        self.pred[start:stop] = block.reshape((rows,) + self.pred.shape[1:])
        with self.lock:
            self.copied += copied
            self.padded += feed.shape[0] - rows
            self.advance(rows)

    def _first(self, row: tuple):
        allowed = self.plan.allowed
        if allowed:
            if row not in allowed:
                raise ValidationError(f"{self.where}: output {self.plan.output.name!r} has rows of shape "
                                      f"{_row_text(row)}, expected {_expected_text(allowed, None)}")
            self.mode = allowed[row]
            final = tuple(self.target_shape) if self.mode in ("target", "flattened") else row
        else:
            self.mode, final = "as-is", row
        self.row_shape = row
        self.pred = np.empty((self.n,) + final, dtype=self.plan.out_dtype)

    def run(self) -> None:
        self.run_one(self.sessions[0], self.starts[0])  # fixes and checks the output's shape
        rest = self.starts[1:]
        if len(self.sessions) == 1 or len(rest) < 2:
            for start in rest:
                self.run_one(self.sessions[0], start)
            return
        errors: list[BaseException] = []

        def work(k: int):
            try:
                for start in rest[k::len(self.sessions)]:
                    if self.failed.is_set():
                        return
                    self.run_one(self.sessions[k], start)
            except BaseException as exc:  # handed to the caller's thread below
                errors.append(exc)
                self.failed.set()

        threads = [threading.Thread(target=work, args=(k,), daemon=True) for k in range(len(self.sessions))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]


def _array_sha256(x: np.ndarray, block_bytes: int = 1 << 23) -> str:
    """sha256 of the array's C-order bytes, read in blocks of whole rows (a non-contiguous array is copied one
    block at a time)."""
    h = hashlib.sha256()
    row_bytes = max(1, x.dtype.itemsize * int(np.prod(x.shape[1:], dtype=np.int64)))
    rows = max(1, block_bytes // row_bytes)
    for start in range(0, x.shape[0], rows):
        h.update(np.ascontiguousarray(x[start:start + rows]).data)
    return h.hexdigest()


def predict(model: str | os.PathLike | ModelFile, windows: str | os.PathLike | WindowsFolder | np.ndarray,
            settings: PredictSettings | None = None, *, target_shape: Sequence[int] | None = None,
            n_classes: int | None = None, axes: Sequence[str] | None = None,
            advance: Callable[[int], None] | None = None) -> Prediction:
    """Run an ONNX model over every row of a windows folder's ``X`` (or of an array), in row order.

    Parameters
    ----------
    model : path-like or ModelFile
        The ``.onnx`` file (read with a size check, refused with external data or custom operators).
    windows : path-like, WindowsFolder or numpy.ndarray
        A folder written by ``rfbench windows`` (its ``X.npy`` memory-mapped and checked against the index;
        or the same already opened by :func:`open_windows`), or an array ``(N, ...)`` (a memory-mapped one is fed
        without copying when C-contiguous).
    settings : PredictSettings, optional
        Batch size, threads, sessions, input/output names, tolerance (defaults when None).
    target_shape, n_classes, axes : optional
        With an array only (a folder supplies them): the row shape of the ground truth, the class count,
        and X's axis names. Without ``target_shape`` and ``n_classes`` any output row shape is accepted.
    advance : callable, optional
        ``advance(rows)`` after each batch (progress).

    Returns
    -------
    Prediction

    Raises
    ------
    MissingDependencyError
        onnxruntime is not installed.
    FormatError, ValidationError
        The model or the folder is unreadable, or the model does not fit the data (one line naming what).

    Examples
    --------
    A ridge regression exported to ONNX, run over an array of windows (a windows folder works the same way):

    >>> import tempfile
    >>> from pathlib import Path
    >>> import numpy as np
    >>> import rfbench
    >>> from rfbench.nn.onnx_export import FeatureMap, fit_ridge, ridge_model
    >>> x = np.random.default_rng(0).normal(size=(20, 4, 3)).astype(np.float32)
    >>> y = x.mean(axis=2) @ np.ones((4, 2))
    >>> features = FeatureMap(row_shape=(4, 3), mean_axes=(1,))
    >>> model = Path(tempfile.mkdtemp()) / "ridge.onnx"
    >>> _ = model.write_bytes(ridge_model(fit_ridge(x.mean(axis=2), y, penalty=1e-6), features))
    >>> out = rfbench.predict(model, x, rfbench.PredictSettings(batch_size=8))
    >>> out.pred.shape, bool(np.allclose(out.pred, y, atol=1e-4))
    ((20, 2), True)
    """
    ort = _onnxruntime()
    settings = settings if settings is not None else PredictSettings()
    if not isinstance(settings, PredictSettings):
        raise ValidationError(f"settings must be a PredictSettings, got {type(settings).__name__}")
    folder = None
    if isinstance(windows, np.ndarray):
        x = windows
        if x.ndim < 1 or x.shape[0] == 0:
            raise ValidationError(f"X must have at least one row, got shape {list(x.shape)}")
        target_kind = None if target_shape is None else "pose"
        if n_classes is not None:
            if isinstance(n_classes, bool) or not isinstance(n_classes, int) or n_classes < 1:
                raise ValidationError(f"n_classes must be a positive integer, got {n_classes!r}")
            target_kind = "label" if target_shape is None or tuple(target_shape) == () else "pose"
        target_shape = None if target_shape is None else tuple(int(d) for d in target_shape)
        axes = tuple(axes) if axes is not None else None
        if axes is not None and len(axes) != x.ndim:
            raise ValidationError(f"axes names {len(axes)} axes but X has {x.ndim}")
        x_info = {"sha256": None, "shape": list(x.shape), "dtype": str(x.dtype),  # hashed while the model runs
                  "axes": list(axes) if axes else None}
    else:
        folder = windows if isinstance(windows, WindowsFolder) else open_windows(windows, check_x=False)
        x = folder.x
        if x.shape[0] == 0:
            raise ValidationError(f"windows folder {folder.path}: X has no rows (an empty side)")
        target_shape, target_kind, n_classes, axes = (folder.target_shape, folder.target_kind, folder.n_classes,
                                                      folder.axes)
        x_info = {"sha256": folder.index["x"]["sha256"], "shape": list(x.shape), "dtype": str(x.dtype),
                  "axes": list(axes)}
    model = model if isinstance(model, ModelFile) else load_model(model)
    plan = _check_model(model, x.shape, x.dtype, axes, settings, target_shape, target_kind, n_classes)

    sessions = [_make_session(ort, model, settings) for _ in range(settings.sessions)]
    names = [i.name for i in sessions[0].get_inputs()]
    if plan.input.name not in names:  # onnxruntime disagrees with the file's own graph: refuse, do not guess
        raise ValidationError(f"model {model.path}: onnxruntime sees inputs {names}, not {plan.input.name!r}")
    run_options = ort.RunOptions()
    run_options.log_severity_level = 4  # as the sessions: failures come back as exceptions, not log lines
    runner = _Runner(sessions, x, plan, target_shape, f"model {model.path}", advance or (lambda n=1: None),
                     run_options)
    hasher = None
    if folder is None:
        hasher = _Hasher(x)
    elif folder.x_sha256 is None:
        hasher = _Hasher(folder.x_path)
    if hasher is not None:
        hasher.start()
    t0 = time.perf_counter()
    try:
        runner.run()
    finally:
        if hasher is not None:
            hasher.join()
    seconds = time.perf_counter() - t0
    if folder is None:
        x_info["sha256"] = hasher.digest
    elif hasher is not None and (hasher.error is not None or hasher.digest != x_info["sha256"]):
        raise ValidationError(_x_changed(folder.x_path))
    return Prediction(pred=runner.pred, model=model, windows=folder, settings=settings, input=plan.input,
                      output=plan.output, output_mode=runner.mode, x=x_info, runtime=_runtime_record(ort, settings),
                      cpu=cpu_isa(), batches=len(runner.starts), copied_batches=runner.copied,
                      padded_rows=runner.padded, seconds=seconds)


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
    from rfbench.io.files import check_writable, write_bytes, write_json

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
        return np.load(self.pred_path, allow_pickle=False)


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


def load_prediction_record(path: str | os.PathLike) -> PredictionRecord:
    """Read ``pred.json`` (or the record beside a ``pred.npy``) and check it against its ``pred.npy``.

    Checks: the schema (``rfbench.prediction/1``), every required key and its type, that ``pred.npy`` is a
    plain file name beside the record, and that the file's size, sha256, dtype and shape are the recorded
    ones. The model and the windows folder are not opened (``score`` and ``verify`` hash them as inputs).

    Raises
    ------
    FormatError, SchemaError
        Unreadable or malformed record.
    ValidationError
        ``pred.npy`` is missing or is not the array the record describes.
    """
    from rfbench.io.files import read_json, sha256_file

    path = Path(path)
    if path.suffix == ".npy":
        path = record_path_for(path)
    if path.exists() and not path.is_file():
        raise FormatError(f"prediction record {path}: not a regular file")
    doc = read_json(path, "prediction")
    where = f"prediction record {path}"
    _need(doc, _RECORD_KEYS, where)
    base = path.parent
    model = _need(doc["model"], ("path", "sha256", "bytes"), f"{where} model")
    _hex64(model["sha256"], f"{where} model.sha256")
    _need(doc["runtime"], ("name", "version", "intra_op_threads", "sessions"), f"{where} runtime")
    _need(doc["cpu"], ("level", "mlas", "flags"), f"{where} cpu")
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
    if not pred_path.is_file():
        raise ValidationError(f"{where}: its predictions {pred_path} are missing")
    digest, size = sha256_file(pred_path)
    if digest != want_sha or size != pred["bytes"]:
        raise ValidationError(f"{where}: {pred_path} is not the array this record describes (sha256 or size "
                              "differs): it changed after `rfbench predict` wrote it")
    arr = _open_npy(pred_path, "predictions")
    if arr.shape != want_shape or str(arr.dtype) != pred["dtype"]:
        raise ValidationError(f"{where}: {pred_path} is {arr.dtype} {list(arr.shape)}, the record says "
                              f"{pred['dtype']} {list(want_shape)}")
    return PredictionRecord(path=path, doc=doc, pred_path=pred_path, model_path=_rel_path(base, model["path"],
                            f"{where} model.path"), windows_path=windows_path, index_path=index_path,
                            settings=settings)


# --- comparing a re-run with the recorded run ----------------------------------------------------------------

@dataclass(frozen=True)
class PredictionComparison:
    """The outcome of :func:`compare_predictions`.

    Attributes
    ----------
    equal : bool
        The predictions agree under the rule that applies.
    rule : str
        ``"identical bits"`` (same onnxruntime version, CPU tier and run settings) or ``"tolerance"``.
    differences : tuple of str
        What differs between the two runs' environments, e.g. ``"onnxruntime 1.32.0 -> 1.31.0"``.
    tolerance : float
        The recorded run's declared tolerance.
    max_difference : float or None
        Largest ``|a - b| / max(1, |a|)`` over finite pairs (None when shapes or dtypes differ).
    detail : str
        One line for the user.
    """

    equal: bool
    rule: str
    differences: tuple
    tolerance: float
    max_difference: float | None
    detail: str

    def raise_if_different(self) -> None:
        """:class:`VerificationError` (exit 1) unless :attr:`equal`."""
        if not self.equal:
            raise VerificationError(self.detail, differences=[self.detail])


def _doc(record: PredictionRecord | Mapping) -> Mapping:
    return record.doc if isinstance(record, PredictionRecord) else record


def _environment_differences(a: Mapping, b: Mapping) -> list[str]:
    out = []
    ra, rb = a.get("runtime") or {}, b.get("runtime") or {}
    if ra.get("version") != rb.get("version"):
        out.append(f"onnxruntime {ra.get('version')} -> {rb.get('version')}")
    ca, cb = a.get("cpu") or {}, b.get("cpu") or {}
    for key, label in (("level", "instruction-set level"), ("mlas", "onnxruntime kernel tier")):
        if ca.get(key) != cb.get(key):
            out.append(f"{label} {ca.get(key)} -> {cb.get(key)}")
    if sorted(ca.get("flags") or []) != sorted(cb.get("flags") or []):
        gone = sorted(set(ca.get("flags") or []) - set(cb.get("flags") or []))
        new = sorted(set(cb.get("flags") or []) - set(ca.get("flags") or []))
        out.append("CPU features" + (f" without {', '.join(gone)}" if gone else "") +
                   (f" with {', '.join(new)}" if new else ""))
    sa, sb = dict(a.get("settings") or {}), dict(b.get("settings") or {})
    sa.pop("tolerance", None)
    sb.pop("tolerance", None)
    for key in sorted(set(sa) | set(sb)):
        if sa.get(key) != sb.get(key):
            out.append(f"setting {key} {sa.get(key)} -> {sb.get(key)}")
    return out


def compare_predictions(recorded: PredictionRecord | Mapping, recorded_pred: np.ndarray,
                        rerun: PredictionRecord | Mapping, rerun_pred: np.ndarray) -> PredictionComparison:
    """Compare a re-run's predictions with the recorded ones.

    Same onnxruntime version, CPU instruction-set level, kernel tier and features, and run settings: the
    arrays must be identical bit for bit. Otherwise (the comparison says what differs) floating-point
    predictions must agree within the recorded run's tolerance ``t``: for every element
    ``|a - b| <= t · max(1, |a|)``, with NaN where the recorded run has NaN and infinities equal; integer
    predictions (labels) must still be identical. Shapes and dtypes must always match.

    Parameters
    ----------
    recorded, rerun : PredictionRecord or mapping
        The two runs' records (``pred.json`` contents).
    recorded_pred, rerun_pred : numpy.ndarray
        Their predictions.
    """
    a_doc, b_doc = _doc(recorded), _doc(rerun)
    tol = float((a_doc.get("settings") or {}).get("tolerance", PredictSettings().tolerance))
    diffs = tuple(_environment_differences(a_doc, b_doc))
    a, b = np.asarray(recorded_pred), np.asarray(rerun_pred)
    rule = "tolerance" if diffs else "identical bits"
    where = ("re-run under " + "; ".join(diffs)) if diffs else "re-run in the same environment"
    if a.shape != b.shape or a.dtype != b.dtype:
        return PredictionComparison(False, rule, diffs, tol, None,
                                    f"predictions differ: recorded {a.dtype} {list(a.shape)}, {where} "
                                    f"{b.dtype} {list(b.shape)}")
    if not np.issubdtype(a.dtype, np.floating):
        rule = "identical bits"
    if rule == "identical bits":
        same = a.tobytes() == b.tobytes()
        worst = _worst(a, b) if np.issubdtype(a.dtype, np.floating) else (0.0 if same else None)
        if same:
            return PredictionComparison(True, rule, diffs, tol, 0.0, f"predictions identical bit for bit ({where})")
        n = int(np.count_nonzero(_bit_differs(a, b)))
        return PredictionComparison(False, rule, diffs, tol, worst,
                                    f"predictions differ in {n} of {a.size} values ({where}; identical bits are "
                                    f"required there)" + (f", largest relative difference {worst:.3g}"
                                                          if worst is not None else ""))
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    inf_ok = np.array_equal(a[np.isinf(a)], b[np.isinf(a)]) and np.array_equal(np.isinf(a), np.isinf(b))
    worst = _worst(a, b)
    ok = bool(np.array_equal(nan_a, nan_b) and inf_ok and (worst is None or worst <= tol))
    detail = (f"predictions agree within tolerance {tol:g} ({where}; largest relative difference {worst or 0.0:.3g})"
              if ok else f"predictions differ beyond tolerance {tol:g} ({where}; largest relative difference "
                         f"{worst if worst is not None else float('nan'):.3g}"
                         + ("; NaN or infinity positions differ" if not (np.array_equal(nan_a, nan_b) and inf_ok)
                            else "") + ")")
    return PredictionComparison(ok, rule, diffs, tol, worst, detail)


def _bit_differs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    width = a.dtype.itemsize
    av = np.ascontiguousarray(a).view(np.uint8).reshape(-1, width)
    bv = np.ascontiguousarray(b).view(np.uint8).reshape(-1, width)
    return (av != bv).any(axis=1)


def _worst(a: np.ndarray, b: np.ndarray) -> float | None:
    finite = np.isfinite(a) & np.isfinite(b)
    if not finite.any():
        return None
    a64, b64 = a[finite].astype(np.float64), b[finite].astype(np.float64)
    return float((np.abs(a64 - b64) / np.maximum(1.0, np.abs(a64))).max())
