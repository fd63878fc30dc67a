"""Run an ONNX model over a windows folder: predictions in the index's row order, and the record of the run.

:func:`predict` is the unit of work: it reads and checks the model (:mod:`rfbench.nn.onnx_file`: size
first; every graph and function walked; no external data, no custom operators, no function shadowing a runtime
operator, no random operator unless allowed), checks its input against ``X`` and its output against ``y``'s
row shape or the index's class count (:mod:`rfbench.nn.model_check`), then feeds ``X`` batch by batch to
onnxruntime sessions that run in bounded child processes (:mod:`rfbench.nn.sandbox`: address space, CPU
time, wall-clock time; :mod:`rfbench.nn.runtime`: the session settings), checks that each row's output is the
model's answer to that row alone (:meth:`_Runner.check_rows_independent`) and returns a :class:`Prediction`.
The other jobs of ``rfbench predict`` live beside it, and their public names are importable from here too:

- :mod:`rfbench.nn.windows_folder`: :func:`open_windows`, the windows folder read and checked;
- :mod:`rfbench.nn.prediction_record`: :func:`write_prediction` writes ``pred.npy`` and its record
  ``pred.json`` (``rfbench.prediction/1``) atomically; :func:`load_prediction_record` reads a record back
  and checks that ``pred.npy`` is the array it describes;
- :mod:`rfbench.nn.prediction_comparison`: :func:`compare_predictions`, the comparison ``verify`` uses when
  it re-runs a prediction.

The input is not copied where ``X`` is C-contiguous and of the model's input dtype: a memory-mapped
``X.npy`` is fed as views of the mapping, one batch at a time, each written to the child's pipe from the
mapping's memory, and onnxruntime wraps the received batch without copying it. Only a non-contiguous ``X``
is copied (one batch at a time), and only a final partial batch of a model with a fixed batch dimension is
padded (a copy of that batch).

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

import contextlib
import functools
import hashlib
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from rfbench._rerun import ENV as RERUN_ENV
from rfbench.errors import ValidationError
from rfbench.nn.model_check import _check_model, _expected_text, _Plan, _row_text
from rfbench.nn.onnx_file import ModelFile, TensorInfo, load_model, random_refusal
from rfbench.nn.predict_settings import PredictSettings, settings_argv, settings_from_dict
from rfbench.nn.prediction_comparison import PredictionComparison, compare_predictions
from rfbench.nn.prediction_record import (
    PredictionRecord,
    load_prediction_record,
    prediction_record,
    record_path_for,
    write_prediction,
)
from rfbench.nn.runtime import (
    INSTALL_HINT,
    _check_onnxruntime,
    _first_line,
    _make_session,
    _runtime_record,
    cpu_isa,
    onnxruntime_version,
)
from rfbench.nn.sandbox import LimitExceeded, Sandbox
from rfbench.nn.windows_folder import FileRows, WindowsFolder, _x_changed, open_windows

__all__ = [
    "PredictSettings", "settings_argv", "settings_from_dict", "WindowsFolder", "open_windows", "Prediction",
    "predict", "prediction_record", "write_prediction", "record_path_for", "PredictionRecord",
    "load_prediction_record", "PredictionComparison", "compare_predictions", "cpu_isa", "onnxruntime_version",
    "INSTALL_HINT", "LimitExceeded",
]


class _Hasher(threading.Thread):
    """sha256 of a file, or of an array's C-order bytes, on its own thread: hashlib releases the GIL on large
    blocks, so it runs beside onnxruntime, which releases it too."""

    def __init__(self, source: "Path | np.ndarray | FileRows"):
        super().__init__(daemon=True)
        self.source = source
        self.digest = None
        self.error = None

    def run(self):
        from rfbench.io.files import sha256_file

        try:
            if isinstance(self.source, np.ndarray):
                self.digest = _array_sha256(self.source)
            elif isinstance(self.source, FileRows):  # the very file the rows are read from
                self.digest = self.source.sha256()
            else:
                self.digest = sha256_file(self.source)[0]
        except (OSError, ValidationError) as exc:
            self.error = exc


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
                 advance: Callable[[int], None], reader: "FileRows | None" = None):
        self.sessions = sessions
        self.x = x
        self.reader = reader  # X's file read, not mapped: for every copy of rows made here (see FileRows)
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
            view, copied = self._padded(view if self.reader is None else self.reader[start:stop]), True
        elif not self.contiguous:
            view, copied = np.ascontiguousarray(view), True
        return stop, view, copied

    def _padded(self, rows: np.ndarray) -> np.ndarray:
        """``rows`` followed by zero rows up to a fixed batch size (a copy)."""
        padded = np.zeros((self.plan.batch_rows,) + self.x.shape[1:], dtype=self.x.dtype)
        padded[:len(rows)] = rows
        return padded

    def run_one(self, session, start: int):
        stop, feed, copied = self.batch(start)
        check = functools.partial(self._check_batch, feed.shape[0])
        out = self._run(session, feed, f"rows {start}-{stop - 1}", check)
        check(out.shape, out.dtype)
        rows = stop - start
        if self.row_shape is None:
            self._first(tuple(out.shape[1:]))
        self.pred[start:stop] = out[:rows].reshape((rows,) + self.pred.shape[1:])
        with self.lock:
            self.copied += copied
            self.padded += feed.shape[0] - rows
            self.advance(rows)

    def _check_batch(self, rows: int, shape: tuple, dtype: np.dtype) -> None:
        """An output of ``shape`` and ``dtype`` for a batch of ``rows`` rows is one row per row, of the dtype the
        model declares and of the row shape of the first batch (for the first: one the task allows)."""
        if len(shape) < 1 or shape[0] != rows:
            raise ValidationError(f"{self.where}: output {self.plan.output.name!r} has shape {list(shape)} for a "
                                  f"batch of {rows} rows; it must give one row per input row")
        if dtype != self.plan.out_dtype:
            raise ValidationError(f"{self.where}: output {self.plan.output.name!r} is {dtype}, but the model "
                                  f"declares {self.plan.out_dtype}")
        row = tuple(shape[1:])
        if self.row_shape is None:
            self._mode(row)
        elif row != self.row_shape:
            raise ValidationError(f"{self.where}: output {self.plan.output.name!r} rows changed shape from "
                                  f"{self.row_shape} to {row} between batches")

    def _run(self, session, feed: np.ndarray, what: str, check: Callable[[tuple, np.dtype], None]) -> np.ndarray:
        """The session's output for ``feed``. ``check`` (which raises ValidationError) is handed to the session,
        which applies it to the output's shape and dtype as the child's header declares them, before reading the
        output's bytes: an output of a refused shape costs rfbench's process no more than its header."""
        try:
            (out,) = session.run([self.plan.output.name], {self.plan.input.name: feed}, check)
        except ValidationError:  # a limit hit, or the child running the model ended: already one line
            raise
        except Exception as exc:
            raise ValidationError(f"{self.where}: onnxruntime failed on {what}: {_first_line(exc)}") from None
        return np.asarray(out)

    def check_rows_independent(self, every_row: bool = False) -> None:
        """Each row's output must be the model's answer to that row alone: rows are run again in another batch —
        :data:`_PROBE_ROWS` rows (an eighth of them, if fewer) drawn at random, in random order, as one batch
        (``every_row``: every row, in a random order, in batches one row smaller; a model of a fixed batch size:
        batches of that size, padded as before) — and must give what they gave (:func:`_same_rows`: each float
        within :data:`ROW_TOLERANCE` of itself, class scores with the same argmax; integers exactly). The draw is
        the operating system's, never recorded, so no model can know it. A model that reads its answers off a
        row's place in the batch (a table of the test labels cut to the batch: its input unused) gave a perfect
        score that a re-run reproduced; one that answers from the batch's statistics gives other answers for
        another batch."""
        n, batch = self.n, self.plan.batch_rows
        if n < 2:
            return
        rng = np.random.default_rng()
        probe = min(_PROBE_ROWS, max(1, n // 8))  # an eighth of the rows at most: a small run stays about as fast
        order = rng.permutation(n) if every_row else rng.choice(n, size=probe, replace=False)
        size = batch if self.plan.fixed_batch else (max(1, min(batch, n) - 1) if every_row else len(order))
        for a in range(0, len(order), size):
            rows = order[a:a + size]
            feed = np.ascontiguousarray(self.x[rows]) if self.reader is None else self.reader[rows]
            if self.plan.fixed_batch and len(rows) < batch:
                feed = self._padded(feed)
            what = f"{len(rows)} row(s) in another batch, in another order"

            def check(shape, dtype, n=feed.shape[0], what=what):
                if len(shape) < 1 or shape[0] != n or tuple(shape[1:]) != self.row_shape:
                    raise ValidationError(f"{self.where}: output {self.plan.output.name!r} has shape "
                                          f"{list(shape)} for {what} ({n} rows); it must give one row per input row")

            out = self._run(self.sessions[0], feed, what, check)
            check(out.shape, out.dtype)
            got = out[:len(rows)].reshape((len(rows),) + self.pred.shape[1:])
            want = self.pred[rows]
            scores = self.mode == "scores"
            if not _same_rows(got, want, scores):
                raise ValidationError(f"{self.where}: its output for a row depends on the other rows of its batch "
                                      f"(run again as {what}, row {int(rows[_first_differing(got, want, scores)])} "
                                      f"gave "
                                      f"another output); rfbench scores models that answer each row from that "
                                      f"row alone")

    def _mode(self, row: tuple) -> str:
        """How rows of shape ``row`` become predictions, when the task allows that shape."""
        allowed = self.plan.allowed
        if not allowed:
            return "as-is"
        if row not in allowed:
            raise ValidationError(f"{self.where}: output {self.plan.output.name!r} has rows of shape "
                                  f"{_row_text(row)}, expected {_expected_text(allowed, None)}")
        return allowed[row]

    def _first(self, row: tuple):
        self.mode = self._mode(row)
        final = tuple(self.target_shape) if self.mode in ("target", "flattened") else row
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


#: Rows :meth:`_Runner.check_rows_independent` runs again outside a verify re-run (one extra onnxruntime call).
_PROBE_ROWS = 8
#: How far a row's float output may move when its batch changes (onnxruntime's kernels may sum in another order
#: for another batch size): ``ROW_TOLERANCE · max(1, |v|)`` for each value ``v``, relative to that value alone
#: (as :func:`compare_predictions` compares), so that no output of the model widens what another may do.
ROW_TOLERANCE = 1e-4


def _same_rows(got: np.ndarray, want: np.ndarray, scores: bool = False) -> bool:
    """Whether ``got`` (rows run again in another batch) gives what ``want`` gave: integers identical; floats
    with NaN and infinities where they were, each finite value within ``ROW_TOLERANCE · max(1, |value|)`` of
    itself; and ``scores`` (class scores, scored by their argmax) the same largest class in each row, however
    close the runner-up. A tolerance relative to the scores cannot be a limit on the argmax: a model adding 1e6
    to every score (its argmax unchanged) would let each row's answer move by 100, and one adding 1e-5 to the
    class it reads off the row's place in the batch would move by less than the 1e-4 floor."""
    if got.dtype.kind != "f":
        return bool(np.array_equal(got, want))
    finite = np.isfinite(want)
    if not np.array_equal(np.isfinite(got), finite) or not np.array_equal(got[~finite], want[~finite],
                                                                           equal_nan=True):
        return False
    if scores and got.ndim == 2 and got.shape[0] and not np.array_equal(got.argmax(axis=1), want.argmax(axis=1)):
        return False
    w = want[finite].astype(np.float64)
    return bool((np.abs(got[finite].astype(np.float64) - w) <= ROW_TOLERANCE * np.maximum(np.abs(w), 1.0)).all())


def _first_differing(got: np.ndarray, want: np.ndarray, scores: bool = False) -> int:
    """The first row (of those compared) whose output differs."""
    for i in range(got.shape[0]):
        if not _same_rows(got[i:i + 1], want[i:i + 1], scores):
            return i
    return 0


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
            advance: Callable[[int], None] | None = None, sandbox: Sandbox | None = None) -> Prediction:
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
        Batch size, threads, sessions, input/output names, tolerance, ``allow_random`` and the limits
        (defaults when None).
    target_shape, n_classes, axes : optional
        With an array only (a folder supplies them): the row shape of the ground truth, the class count,
        and X's axis names. Without ``target_shape`` and ``n_classes`` any output row shape is accepted.
    advance : callable, optional
        ``advance(rows)`` after each batch (progress).
    sandbox : Sandbox, optional
        The bounded children to run the model in, kept open by the caller across many calls (their sessions
        over the same model are reused, and the box's limits, not ``settings``', bound them all); by default a
        box of its own, with ``settings``' limits, for this call alone.

    Returns
    -------
    Prediction

    Raises
    ------
    MissingDependencyError
        onnxruntime is not installed.
    FormatError, ValidationError
        The model or the folder is unreadable, or the model does not fit the data (one line naming what).
    LimitExceeded
        The model hit its address-space, CPU-time or wall-clock limit (a :class:`ValidationError`; its
        ``limit`` names the setting that raises it).

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
    _check_onnxruntime()
    settings = settings if settings is not None else PredictSettings()
    if not isinstance(settings, PredictSettings):
        raise ValidationError(f"settings must be a PredictSettings, got {type(settings).__name__}")
    folder = reader = None
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
        x, reader = folder.x, folder.x_rows
        if x.shape[0] == 0:
            raise ValidationError(f"windows folder {folder.path}: X has no rows (an empty side)")
        target_shape, target_kind, n_classes, axes = (folder.target_shape, folder.target_kind, folder.n_classes,
                                                      folder.axes)
        x_info = {"sha256": folder.index["x"]["sha256"], "shape": list(x.shape), "dtype": str(x.dtype),
                  "axes": list(axes)}
    if settings.flatten:  # one vector per row, C order: a view of X (a memory map stays one)
        x = x.reshape(x.shape[0], -1) if x.flags.c_contiguous else np.ascontiguousarray(x).reshape(x.shape[0], -1)
        reader = reader.reshape(x.shape[0], -1) if reader is not None else None
        axes = None
    if isinstance(model, ModelFile):
        if model.random and not settings.allow_random:
            raise random_refusal(f"model {model.path}", model.random)
    else:
        model = load_model(model, allow_random=settings.allow_random)
    plan = _check_model(model, x.shape, x.dtype, axes, settings, target_shape, target_kind, n_classes)

    where = f"model {model.path}"
    own = sandbox is None
    with Sandbox(settings, where) if own else contextlib.nullcontext(sandbox) as box:
        # the model runs in child processes, within the run's limits
        sessions = ([_make_session(box, model, settings) for _ in range(settings.sessions)] if own
                    else box.sessions_for(model, settings.sessions))
        names = [i.name for i in sessions[0].get_inputs()]
        if plan.input.name not in names:  # onnxruntime disagrees with the file's own graph: refuse, do not guess
            raise ValidationError(f"{where}: onnxruntime sees inputs {names}, not {plan.input.name!r}")
        runner = _Runner(sessions, x, plan, target_shape, where, advance or (lambda n=1: None), reader)
        hasher = None
        if folder is None:
            hasher = _Hasher(x)
        elif folder.x_sha256 is None:
            hasher = _Hasher(folder.x_rows)
        if hasher is not None:
            hasher.start()
        t0 = time.perf_counter()
        try:
            runner.run()
            seconds = time.perf_counter() - t0
            if not model.random:  # a model drawing random numbers (--allow-random) answers differently each run
                # every row when verify re-runs the chain (the variable only ever tightens what a run does)
                runner.check_rows_independent(every_row=os.environ.get(RERUN_ENV) is not None)
        finally:
            if hasher is not None:
                hasher.join()
        version = box.version
    if folder is None:
        x_info["sha256"] = hasher.digest
    elif hasher is not None and (hasher.error is not None or hasher.digest != x_info["sha256"]):
        raise ValidationError(_x_changed(folder.x_path))
    return Prediction(pred=runner.pred, model=model, windows=folder, settings=settings, input=plan.input,
                      output=plan.output, output_mode=runner.mode, x=x_info, runtime=_runtime_record(version, settings),
                      cpu=cpu_isa(), batches=len(runner.starts), copied_batches=runner.copied,
                      padded_rows=runner.padded, seconds=seconds)
