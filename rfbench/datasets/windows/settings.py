"""The window settings: one frozen dataclass whose fields carry their default, bounds and help.

Every option of ``rfbench windows`` is a field of :class:`WindowSettings`; the command's options, the settings an
index records and the documentation are derived from the fields' ``metadata``:

- ``help``: one line saying what the field does;
- ``min`` / ``max`` (inclusive) for numbers, ``choices`` for a closed set of values;
- ``datasets``: the kinds of corpus it applies to (``mmfi``, ``intel5300``); setting it for another is an error;
- ``default``: the value per dataset kind when the field is left as None (a per-dataset default always takes
  precedence over a generic window length: MM-Fi's is one frame, because every ``frameNNN.mat`` is already a
  10-packet snapshot with its own pose).

This module imports only the standard library (the command line builds its options from it at start-up).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

from rfbench.csi.corruption_table import parse_corruption
from rfbench.errors import ValidationError

__all__ = ["WindowSettings", "DATASET_KINDS", "setting_fields", "option_name", "describe"]

#: The corpus kinds windows are built for: MM-Fi trees, manifest-described Intel 5300 corpora (Widar3.0's CSI) and
#: Widar3.0's BVP release (velocity profiles).
DATASET_KINDS = ("mmfi", "intel5300", "bvp")
_BOTH = ("mmfi", "intel5300")
#: Longest BVP row (time steps) windows pad or cut to.
MAX_T_MAX = 4096
_ANTENNAS = tuple(f"{r}x{t}" for r in (1, 2, 3) for t in (1, 2, 3))


def _meta(help: str, *, datasets=_BOTH, default=None, choices=None, min=None, max=None, type=str,
          option: str | None = None, check=None) -> dict:
    meta: dict[str, Any] = {"help": help, "datasets": tuple(datasets), "type": type}
    if check is not None:
        meta["check"] = check
    if default is not None:
        meta["default"] = dict(default)
    if choices is not None:
        meta["choices"] = tuple(choices)
    if min is not None:
        meta["min"] = min
    if max is not None:
        meta["max"] = max
    if option is not None:
        meta["option"] = option
    return meta


@dataclass(frozen=True)
class WindowSettings:
    """How one side of a split becomes model inputs (``X``) and targets (``y``).

    Leave a field as None for its per-dataset default (see :meth:`resolved`); the index records the resolved
    values, so an index says exactly how its rows were made. Invalid values raise
    :class:`~rfbench.errors.ValidationError` when the object is made.
    """

    task: str | None = field(default=None, metadata=_meta(
        "what y holds: pose (MM-Fi's ground-truth joints of the target frame) or gesture (the recording's label "
        "as an index into one label set)",
        choices=("pose", "gesture"), datasets=DATASET_KINDS,
        default={"mmfi": "pose", "intel5300": "gesture", "bvp": "gesture"}))
    length: int | None = field(default=None, metadata=_meta(
        "window length: WiFi frames (MM-Fi, each a 10-packet snapshot) or packets of one receiver (Intel 5300)",
        type=int, min=1, max=8192, default={"mmfi": 1, "intel5300": 64}))
    stride: int | None = field(default=None, metadata=_meta(
        "frames (MM-Fi) or packets (Intel 5300) between window starts; Intel 5300 default: the window length "
        "(no overlap)", type=int, min=1, max=8192, default={"mmfi": 1}))
    target: str | None = field(default=None, metadata=_meta(
        "pose: the window's frame whose ground truth is y: last, first or center (start + length // 2)",
        datasets=("mmfi",), choices=("last", "first", "center"), default={"mmfi": "last"}))
    features: str | None = field(default=None, metadata=_meta(
        "the feature axis of X: amp,phase (CSI amplitude then phase), amp or phase",
        choices=("amp,phase", "amp", "phase"), default={"mmfi": "amp,phase", "intel5300": "amp"}))
    nonfinite: str | None = field(default=None, metadata=_meta(
        "non-finite CSI in a frame: refuse (an error naming the frame) or toolbox-fill (the MM-Fi toolbox's fill: "
        "each packet's non-finite amplitudes become the mean of its finite ones; phase is never filled)",
        datasets=("mmfi",), choices=("refuse", "toolbox-fill"), default={"mmfi": "refuse"}))
    csi: str | None = field(default=None, metadata=_meta(
        "Intel 5300: features of the raw CSI (the logged integers) or of the scaled CSI (get_scaled_csi.m, "
        "absolute units)", datasets=("intel5300",), choices=("raw", "scaled"), default={"intel5300": "raw"}))
    subcarriers: int | None = field(default=None, metadata=_meta(
        "Intel 5300: subcarriers per packet: 30 (the logged groups) or 56 / 114 (the HT20 / HT40 grid, by linear "
        "interpolation of the complex CSI across subcarriers)",
        datasets=("intel5300",), type=int, choices=(30, 56, 114), default={"intel5300": 30}))
    bandwidth: int | None = field(default=None, metadata=_meta(
        "Intel 5300: channel width of the logs in MHz (20: the 30 groups are every 2nd subcarrier; 40: every "
        "4th); fixes the grid --subcarriers maps from",
        datasets=("intel5300",), type=int, choices=(20, 40), default={"intel5300": 20}))
    antennas: str | None = field(default=None, metadata=_meta(
        "Intel 5300: the Nrx x Ntx of the records windows are made of (records of another shape are handled by "
        "--odd-records)", datasets=("intel5300",), choices=_ANTENNAS, default={"intel5300": "3x1"}))
    odd_records: str | None = field(default=None, metadata=_meta(
        "Intel 5300: records of another shape than --antennas: drop-records (leave each out of its receiver's "
        "packets; the index lists every one), drop-recording (exclude the recording) or refuse (an error)",
        datasets=("intel5300",), choices=("drop-records", "drop-recording", "refuse"),
        default={"intel5300": "drop-records"}))
    resample: int | None = field(default=None, metadata=_meta(
        "Intel 5300: instead of packet windows, one row per recording holding every receiver's packets "
        "resampled (linearly, over the packet index) to this many", datasets=("intel5300",), type=int, min=2,
        max=65536))
    label_set: str | None = field(default=None, metadata=_meta(
        "gesture: names.txt (one class name per line) fixing the classes and their order; default: the label "
        "names of the whole manifest in natural order (1, 2, ..., 10). Recordings whose label is not in it are "
        "excluded", option="label-set", datasets=DATASET_KINDS))
    corrupt: str | None = field(default=None, metadata=_meta(
        "corrupt the CSI before features are computed: ID:SEVERITY, ID one of noise, packet-loss, burst-loss, "
        "dead-antenna, subcarrier-dropout, agc-jump, phase-slope, truncation and SEVERITY 1 (mild) to 5 (harsh), "
        "as docs/robustness-suite.md defines them", check=parse_corruption))
    corrupt_seed: int | None = field(default=None, metadata=_meta(
        "the seed of --corrupt's random draws (each recording's, receiver's or frame's drawn from its own "
        "generator, keyed by this seed, the corruption and the recording id); default 0 with --corrupt",
        type=int, min=0, max=2**32 - 1))
    t_max: int | None = field(default=None, metadata=_meta(
        "BVP: time steps of every row: each recording's (20, 20, T) profile is zero-padded after its last step, "
        "or cut after step t_max; default: the longest T of the split's train side (both sides use it)",
        datasets=("bvp",), type=int, min=1, max=MAX_T_MAX, option="t-max"))
    release: str | None = field(default=None, metadata=_meta(
        "Widar3.0 with both releases in one manifest (ingest widar --kind both): the release whose recordings "
        "become rows, csi (receiver logs) or bvp (velocity profiles); the other release's recordings are left out",
        datasets=("intel5300", "bvp"), choices=("csi", "bvp")))

    def __post_init__(self):
        for f in dataclasses.fields(self):
            _check_value(f, getattr(self, f.name))

    # -- conversions ---------------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Every field by name (None where it does not apply), as the index's ``settings`` records them."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, values: Mapping[str, Any], where: str = "settings") -> "WindowSettings":
        """Settings from a mapping of field names (an index's ``settings``); unknown names are refused."""
        if not isinstance(values, Mapping):
            raise ValidationError(f"{where}: window settings must be an object of field names")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise ValidationError(f"{where}: unknown window setting(s) {', '.join(unknown)}; this rfbench knows "
                                  f"{', '.join(sorted(names))}")
        try:
            return cls(**dict(values))
        except ValidationError as exc:
            raise ValidationError(f"{where}: {exc}") from None

    def to_argv(self) -> list[str]:
        """Command-line options that reproduce these settings (fields left as None are left out)."""
        argv: list[str] = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is not None:
                argv += [option_name(f), str(value)]
        return argv

    # -- per-dataset resolution ----------------------------------------------------------------------------

    def resolved(self, kind: str) -> "WindowSettings":
        """These settings with every None replaced by ``kind``'s default, and every field that does not apply
        to ``kind`` (or to the task, or to the chosen mode) checked to be None.

        Raises
        ------
        ValidationError
            A field set for a dataset kind, task or mode it does not apply to (``resample`` with MM-Fi,
            ``target`` with gesture, ``length`` with ``resample``...).
        """
        if kind not in DATASET_KINDS:
            raise ValidationError(f"unknown dataset kind {kind!r}; windows are built for {', '.join(DATASET_KINDS)}")
        for f in dataclasses.fields(self):
            if getattr(self, f.name) is not None and kind not in f.metadata["datasets"]:
                raise ValidationError(f"window setting {f.name} applies to {' and '.join(f.metadata['datasets'])} "
                                      f"corpora, not {kind}")
        values = self.to_dict()
        task = values["task"] or f_default("task", kind)
        values["task"] = task
        if kind in ("intel5300", "bvp") and task == "pose":
            raise ValidationError(f"{_KIND_NAMES[kind]} corpora carry no pose ground truth; use task gesture")
        if task == "gesture" and values["target"] is not None:
            raise ValidationError("window setting target chooses a pose frame; it does not apply to task gesture")
        if task == "pose" and values["label_set"] is not None:
            raise ValidationError("a label set applies to task gesture, not pose (y is the ground-truth joints)")
        if values["corrupt_seed"] is not None and values["corrupt"] is None:
            raise ValidationError("window setting corrupt_seed seeds a corruption: set corrupt too")
        if values["corrupt"] is not None and values["nonfinite"] == "toolbox-fill":
            raise ValidationError("corruptions apply to finite CSI: the toolbox fill cannot be combined with "
                                  "corrupt")
        if values["resample"] is not None:
            for name in ("length", "stride"):
                if values[name] is not None:
                    raise ValidationError(f"window setting {name} is for packet windows; with resample each "
                                          "recording is one row")
        for f in dataclasses.fields(self):
            if values[f.name] is None and kind in f.metadata["datasets"]:
                values[f.name] = f.metadata.get("default", {}).get(kind)
        if values["corrupt"] is not None and values["corrupt_seed"] is None:
            values["corrupt_seed"] = 0
        if task != "pose":
            values["target"] = None
        if values["resample"] is not None:
            values["length"] = values["stride"] = None
        elif kind == "intel5300" and values["stride"] is None:
            values["stride"] = values["length"]
        return WindowSettings(**values)

    @property
    def feature_names(self) -> tuple[str, ...]:
        """The names along X's feature axis (``("amp", "phase")``...)."""
        return tuple((self.features or "").split(",")) if self.features else ()


def setting_fields() -> tuple[dataclasses.Field, ...]:
    """The fields of :class:`WindowSettings`, in declaration order (options, docs and tests walk them)."""
    return dataclasses.fields(WindowSettings)


def option_name(f: dataclasses.Field) -> str:
    """The command-line option of a field: ``--`` plus its ``option`` metadata or its name with ``-`` for ``_``."""
    return "--" + f.metadata.get("option", f.name.replace("_", "-"))


_KIND_NAMES = {"mmfi": "MM-Fi", "intel5300": "Intel 5300", "bvp": "BVP"}


def describe(f: dataclasses.Field) -> str:
    """A field's help with its allowed values, per-dataset defaults and the datasets it applies to: the text of
    its command-line option and of its row in docs/windows.md."""
    meta = f.metadata
    text = meta["help"]
    if "choices" in meta:
        text += " (one of " + ", ".join(map(str, meta["choices"])) + ")"
    elif "min" in meta:
        text += f" ({meta['min']} to {meta['max']})"
    text += "."
    defaults = meta.get("default", {})
    if defaults:
        text += " Default: " + ", ".join(f"{_KIND_NAMES[k]} {v}" for k, v in defaults.items()) + "."
    if tuple(meta["datasets"]) != DATASET_KINDS:
        text += " " + " and ".join(_KIND_NAMES[k] for k in meta["datasets"]) + " only."
    return text


def f_default(name: str, kind: str):
    """The default of field ``name`` for dataset ``kind`` (None when it has none)."""
    (f,) = [f for f in dataclasses.fields(WindowSettings) if f.name == name]
    return f.metadata.get("default", {}).get(kind)


def _check_value(f: dataclasses.Field, value: Any) -> None:
    if value is None:
        return
    meta = f.metadata
    kind = meta["type"]
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValidationError(f"window setting {f.name} must be an integer, not {value!r}")
    elif not isinstance(value, str) or not value:
        raise ValidationError(f"window setting {f.name} must be a non-empty string, not {value!r}")
    if "check" in meta:
        try:
            meta["check"](value)
        except ValidationError as exc:
            raise ValidationError(f"window setting {f.name}: {exc}") from None
    if "choices" in meta and value not in meta["choices"]:
        raise ValidationError(f"window setting {f.name} must be one of {', '.join(map(str, meta['choices']))}, "
                              f"not {value!r}")
    if "min" in meta and value < meta["min"]:
        raise ValidationError(f"window setting {f.name} must be at least {meta['min']}, not {value}")
    if "max" in meta and value > meta["max"]:
        raise ValidationError(f"window setting {f.name} must be at most {meta['max']}, not {value}")
