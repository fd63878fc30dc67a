"""The settings of a prediction run: one frozen dataclass whose fields declare their default, bounds and help.

Kept free of NumPy so the ``rfbench predict`` command can build its options from the fields at import time
without slowing ``rfbench --help``. Each field's ``metadata`` holds ``help``, ``option`` (the command-line
option) and, for numbers, ``min`` and ``max``; :func:`settings_argv` derives the recorded command-line
options from the same fields, and :func:`settings_from_dict` reads a recorded ``settings`` object back.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Mapping

from rfbench.errors import ConfigError, FormatError

__all__ = ["PredictSettings", "settings_argv", "settings_from_dict", "setting_meta"]


@dataclass(frozen=True)
class PredictSettings:
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
    tolerance : float
        Largest ``|a - b| / max(1, |a|)`` a re-run may differ by when its onnxruntime version, CPU tier or
        run settings differ (0–1); identical bits are required otherwise.

    Examples
    --------
    >>> import rfbench
    >>> rfbench.PredictSettings(batch_size=64, intra_op_threads=2).batch_size
    64
    """

    batch_size: int = field(default=64, metadata={
        "option": "--batch-size", "min": 1, "max": 65536,
        "help": "Windows per onnxruntime call. A model with a fixed batch dimension needs exactly that size."})
    intra_op_threads: int = field(default=1, metadata={
        "option": "--threads", "min": 1, "max": 64,
        "help": "onnxruntime intra-op threads per session (explicit, never 'all cores': it is part of what "
                "makes a run reproducible)."})
    sessions: int = field(default=1, metadata={
        "option": "--sessions", "min": 1, "max": 16,
        "help": "Concurrent onnxruntime sessions, each on its own thread with its own copy of the model, taking "
                "batches in turn."})
    input_name: str | None = field(default=None, metadata={
        "option": "--input",
        "help": "The model input X feeds (needed when the model has several inputs)."})
    output_name: str | None = field(default=None, metadata={
        "option": "--output",
        "help": "The model output written as predictions (needed when the model has several outputs)."})
    tolerance: float = field(default=1e-5, metadata={
        "option": "--tolerance", "min": 0.0, "max": 1.0,
        "help": "Largest |a - b| / max(1, |a|) a re-run may differ by when it uses another onnxruntime version, "
                "CPU instruction-set tier or run settings; otherwise identical bits are required."})

    def __post_init__(self):
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            meta = f.metadata
            label = f"{f.name} ({meta['option']})"
            if f.type in ("int", int):
                if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                    raise ConfigError(f"{label} must be an integer, got {value!r}")
                object.__setattr__(self, f.name, int(value))
            elif f.type in ("float", float):
                if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
                    raise ConfigError(f"{label} must be a finite number, got {value!r}")
                object.__setattr__(self, f.name, float(value))
            else:  # the optional names
                if value is not None and (not isinstance(value, str) or not value.strip()):
                    raise ConfigError(f"{label} must be a non-empty name or unset, got {value!r}")
                continue
            value = getattr(self, f.name)
            if "min" in meta and value < meta["min"]:
                raise ConfigError(f"{label} must be >= {meta['min']}, got {value!r}")
            if "max" in meta and value > meta["max"]:
                raise ConfigError(f"{label} must be <= {meta['max']}, got {value!r}")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def setting_meta(name: str) -> Mapping[str, Any]:
    """The metadata of one :class:`PredictSettings` field (``help``, ``option``, ``min``, ``max``) and its
    ``default``."""
    for f in dataclasses.fields(PredictSettings):
        if f.name == name:
            return {**f.metadata, "default": f.default}
    raise KeyError(name)


def settings_argv(settings: PredictSettings) -> list[str]:
    """The command-line options that reproduce ``settings``: every field that has a value, in field order,
    numbers written so that they read back exactly."""
    argv = []
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        if value is None:
            continue
        argv += [f.metadata["option"], repr(value) if isinstance(value, float) else str(value)]
    return argv


def settings_from_dict(obj: Any, where: str = "settings") -> PredictSettings:
    """:class:`PredictSettings` from a recorded ``settings`` object; unknown or missing keys are refused."""
    if not isinstance(obj, Mapping):
        raise FormatError(f"{where}: expected an object of prediction settings")
    names = [f.name for f in dataclasses.fields(PredictSettings)]
    unknown = sorted(set(obj) - set(names))
    missing = [n for n in names if n not in obj]
    if unknown or missing:
        problems = ([f"unknown keys {unknown}"] if unknown else []) + ([f"missing keys {missing}"] if missing else [])
        raise FormatError(f"{where}: " + "; ".join(problems))
    try:
        return PredictSettings(**{n: obj[n] for n in names})
    except ConfigError as exc:
        raise FormatError(f"{where}: {exc}") from None
