"""The settings of a prediction run: one frozen dataclass whose fields declare their default, bounds and help.

Kept free of NumPy so the ``rfbench predict`` command can build its options from the fields at import time
without slowing ``rfbench --help``. The fields are :func:`rfbench.settings.setting` declarations: the
command's options, the recorded argv (:func:`settings_argv`) and the checks derive from them, and
:func:`settings_from_dict` reads a recorded ``settings`` object back.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from rfbench.errors import FormatError, ValidationError
from rfbench.settings import Settings, setting

__all__ = ["PredictSettings", "settings_argv", "settings_from_dict"]


@dataclass(frozen=True)
class PredictSettings(Settings):
    """Everything that decides a prediction run besides the model and the data; all recorded in ``pred.json``.

    Attributes
    ----------
    batch_size : int
        Windows per onnxruntime call (1–65536; a model with a fixed batch dimension needs exactly that size).
    intra_op_threads : int
        onnxruntime intra-op threads per session (1–64).
    sessions : int
        Concurrent sessions, each on its own thread with its own copy of the model (1–16).
    input_name, output_name : str or None
        The model input X feeds and the output written (needed when the model has several).
    flatten : bool
        Feed each row flattened, ``X.reshape(N, -1)`` (a view: nothing is copied), for models of flat feature
        vectors.
    tolerance : float
        Largest ``|a - b| / max(1, |a|)`` a re-run may differ by when its onnxruntime version, CPU tier or
        run settings differ (0–1); identical bits are required otherwise.
    allow_random : bool
        Run a model that holds random operators (RandomNormal, RandomUniform, their -Like forms, Multinomial,
        Bernoulli, Dropout in training mode); refused otherwise. Its predictions cannot be reproduced, so
        ``rfbench verify`` answers NOT REPRODUCIBLE.
    memory_mb : int
        Address-space limit (``RLIMIT_AS``) of the child process each onnxruntime session runs in, MiB.
    cpu_seconds : int
        CPU-time limit (``RLIMIT_CPU``) of each such child, seconds.
    timeout : float
        Wall-clock seconds the model may run (every child, from its start to its last batch).

    Examples
    --------
    >>> import rfbench
    >>> rfbench.PredictSettings(batch_size=64, intra_op_threads=2).batch_size
    64
    """

    batch_size: int = setting(64, "Windows per onnxruntime call. A model with a fixed batch dimension needs exactly "
                                  "that size.", min=1, max=65536)
    intra_op_threads: int = setting(1, "onnxruntime intra-op threads per session (explicit, never 'all cores': it "
                                       "is part of what makes a run reproducible).", flag="--threads", min=1, max=64)
    sessions: int = setting(1, "Concurrent onnxruntime sessions, each on its own thread with its own copy of the "
                               "model, taking batches in turn.", min=1, max=16)
    input_name: Optional[str] = setting(None, "The model input X feeds (needed when the model has several inputs).",
                                        flag="--input")
    output_name: Optional[str] = setting(None, "The model output written as predictions (needed when the model has "
                                               "several outputs).", flag="--output")
    flatten: bool = setting(False, "Feed each row of X flattened to one vector of all its values (C order): for a "
                                   "model whose input is (N, features), such as a scikit-learn model exported with "
                                   "skl2onnx. Recorded, so a re-run flattens too.")
    tolerance: float = setting(1e-5, "Largest |a - b| / max(1, |a|) a re-run may differ by when it uses another "
                                     "onnxruntime version, CPU instruction-set tier or run settings; otherwise "
                                     "identical bits are required.", min=0.0, max=1.0)
    allow_random: bool = setting(False, "Run a model that holds random operators (RandomNormal, RandomUniform, their "
                                        "-Like forms, Multinomial, Bernoulli, Dropout in training mode). Recorded: "
                                        "rfbench verify then answers NOT REPRODUCIBLE.")
    memory_mb: int = setting(4096, "Address-space limit of the child process onnxruntime runs the model in, MiB "
                                   "(about 250 MiB of it is Python, NumPy and onnxruntime themselves).",
                             min=256, max=1 << 22)
    cpu_seconds: int = setting(3600, "CPU-time limit of that child process, seconds (all its threads).",
                               min=1, max=1 << 20)
    timeout: float = setting(3600.0, "Wall-clock seconds the model may run, from the child's start to its last "
                                     "batch.", min=0.1, max=1e6)

    def check(self) -> None:
        for name in ("input_name", "output_name"):
            value = getattr(self, name)
            if value is not None and not value.strip():
                raise ValidationError(f"`{name}` must be a non-empty name or unset, got {value!r}")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def settings_argv(settings: PredictSettings) -> list[str]:
    """The command-line options that reproduce ``settings``: every field that has a value, in field order,
    numbers written so that they read back exactly."""
    return settings.argv()


#: Settings added after the first records were written, with the value a record without them was made with.
_ADDED_LATER = {"flatten": False, "allow_random": False, "memory_mb": 4096, "cpu_seconds": 3600,
                "timeout": 3600.0}


def settings_from_dict(obj: Any, where: str = "settings") -> PredictSettings:
    """:class:`PredictSettings` from a recorded ``settings`` object; unknown or missing keys are refused."""
    if not isinstance(obj, Mapping):
        raise FormatError(f"{where}: expected an object of prediction settings")
    names = [f.name for f in dataclasses.fields(PredictSettings)]
    unknown = sorted(set(obj) - set(names))
    missing = [n for n in names if n not in obj and n not in _ADDED_LATER]
    if unknown or missing:
        problems = ([f"unknown keys {unknown}"] if unknown else []) + ([f"missing keys {missing}"] if missing else [])
        raise FormatError(f"{where}: " + "; ".join(problems))
    try:
        return PredictSettings(**{n: obj.get(n, _ADDED_LATER.get(n)) for n in names})
    except ValidationError as exc:
        raise FormatError(f"{where}: {exc}") from None
