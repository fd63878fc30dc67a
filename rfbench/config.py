"""rfbench's configuration: ``rfbench.toml`` or ``[tool.rfbench]`` in ``pyproject.toml``, every number bounded.

Where it is read from
--------------------
An explicit path (``--config``) wins. Otherwise the current folder and then each parent is searched; in each
folder ``rfbench.toml`` is used if present, else ``pyproject.toml`` if it has a ``[tool.rfbench]`` table.
With no file, the defaults apply. TOML is read with the standard library's ``tomllib`` (Python ≥ 3.11) or
the ``tomli`` package on older Pythons.

Layout (``rfbench.toml``; in ``pyproject.toml`` the same tables sit under ``[tool.rfbench]``)::

    [window]   length, stride                       (frames)
    [adapt]    rank, steps, learning_rate, fd_step, temperature, entropy_weight, prototypes, max_frames,
               max_halvings, seed
    [datasets] widar_root, mmfi_root                (paths; relative ones are relative to the file)

Every numeric key has an inclusive lower and upper bound (see :data:`FIELDS`), so no config can ask for a
huge allocation. ``[adapt]`` is read by ``rfbench adapt``; ``[window]`` and ``[datasets]`` are checked here and
reserved for the commands that will read them (a window length and dataset roots). An unknown key, a wrong type
or an out-of-range value raises :class:`~rfbench.errors.ConfigError` naming the key, the value and what is
allowed. ``rfbench proof`` does not read the config: its run is fixed so its hash means one thing.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rfbench.errors import ConfigError
from rfbench.io.files import read_input_bytes

__all__ = ["Field", "FIELDS", "Config", "find_config", "load_config", "parse_toml",
           "validate", "override", "check_paths"]

@dataclass(frozen=True)
class Field:
    """One configuration key: ``kind`` is ``"int"``, ``"float"`` or ``"path"``; bounds are inclusive."""

    key: str
    kind: str
    default: Any
    minimum: float | None = None
    maximum: float | None = None
    help: str = ""

    def allowed(self) -> str:
        """The allowed values in words, for messages and ``config show``."""
        if self.kind == "path":
            return "a path"
        return f"{_fmt(self.minimum)}..{_fmt(self.maximum)}"


def _fmt(v) -> str:
    if isinstance(v, float) and (v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e6)):
        return f"{v:g}"
    return str(v)


_U32 = 2**32 - 1

FIELDS: tuple[Field, ...] = (
    Field("window.length", "int", 64, 1, 8192, "frames per window"),
    Field("window.stride", "int", 32, 1, 8192, "frames between window starts"),
    Field("adapt.rank", "int", 2, 1, 64, "adapter rank"),
    Field("adapt.steps", "int", 5, 0, 10_000, "adaptation steps"),
    Field("adapt.learning_rate", "float", 8.0, 1e-9, 1000.0, "first step length tried each step"),
    Field("adapt.fd_step", "float", 1e-5, 1e-10, 1e-2, "finite-difference step h"),
    Field("adapt.temperature", "float", 0.5, 1e-3, 100.0, "softmax temperature of both objectives"),
    Field("adapt.entropy_weight", "float", 0.1, 0.0, 100.0, "weight of the entropy term"),
    Field("adapt.prototypes", "int", 8, 1, 256, "prototypes of the entropy term"),
    Field("adapt.max_frames", "int", 64, 2, 4096, "frames adapted on"),
    Field("adapt.max_halvings", "int", 20, 0, 60, "step halvings tried before giving up"),
    Field("adapt.seed", "int", 0, 0, _U32, "seed of the adapter's initial weights"),
    Field("datasets.widar_root", "path", None, help="Widar3.0 root (holds CSI/)"),
    Field("datasets.mmfi_root", "path", None, help="MM-Fi root (holds E01..E04)"),
)
_BY_KEY = {f.key: f for f in FIELDS}
_SECTIONS = sorted({f.key.split(".")[0] for f in FIELDS})


@dataclass(frozen=True)
class Config:
    """Validated configuration: ``values`` maps every key to its value, ``from_file`` the keys the file set."""

    values: dict
    source: Path | None
    from_file: frozenset

    def __getitem__(self, key: str):
        return self.values[key]

    def section(self, name: str) -> dict:
        """The keys of one table without their prefix, e.g. ``section("adapt")["rank"]``."""
        prefix = name + "."
        return {k[len(prefix):]: v for k, v in self.values.items() if k.startswith(prefix)}


def _toml_module():
    try:
        import tomllib as toml
    except ImportError:  # Python < 3.11
        try:
            import tomli as toml
        except ImportError:
            from rfbench.errors import MissingDependencyError

            raise MissingDependencyError("reading TOML on Python < 3.11 needs the tomli package: "
                                         "pip install tomli") from None
    return toml


def parse_toml(path: str | os.PathLike) -> dict:
    """Read a TOML file into a dict; a missing, unreadable or malformed file raises ConfigError."""
    from rfbench.io.documents import MAX_TOML_BYTES, parse_toml_text

    _toml_module()  # a clear error on Python < 3.11 without tomli
    data = read_input_bytes(path, "config file", ConfigError, cap=MAX_TOML_BYTES, expected="a TOML file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    return parse_toml_text(text, str(path), error=ConfigError)


def _table_of(path: Path, document: dict) -> dict:
    """The rfbench table of a parsed file: ``[tool.rfbench]`` of a pyproject.toml, else the whole file."""
    if path.name == "pyproject.toml":
        tool = document.get("tool", {})
        table = tool.get("rfbench") if isinstance(tool, dict) else None
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: no [tool.rfbench] table; add one or use an rfbench.toml file")
        return table
    return document


def find_config(start: str | os.PathLike | None = None) -> Path | None:
    """The config file for folder ``start`` (default: the current folder), searching upwards; None if none."""
    folder = Path(start or os.getcwd()).resolve()
    for directory in (folder, *folder.parents):
        candidate = directory / "rfbench.toml"
        if candidate.is_file():
            return candidate
        pyproject = directory / "pyproject.toml"
        if pyproject.is_file():
            try:
                document = parse_toml(pyproject)
            except ConfigError:
                continue  # someone else's broken pyproject is not our config
            tool = document.get("tool")
            if isinstance(tool, dict) and "rfbench" in tool:
                return pyproject
    return None


def _check_value(f: Field, value, where: str, base: Path | None):
    key = f"{where}{f.key}"
    if f.kind == "path":
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{key} = {value!r}: expected a non-empty path string")
        p = Path(value).expanduser()
        return (base / p) if (base is not None and not p.is_absolute()) else p
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{key} = {value!r}: expected {'an integer' if f.kind == 'int' else 'a number'} "
                          f"in {f.allowed()}")
    if f.kind == "int" and not isinstance(value, int):
        raise ConfigError(f"{key} = {value!r}: expected an integer in {f.allowed()}")
    if f.kind == "float":
        value = float(value)
        if not math.isfinite(value):
            raise ConfigError(f"{key} = {value!r}: expected a finite number in {f.allowed()}")
    if not (f.minimum <= value <= f.maximum):
        raise ConfigError(f"{key} = {value!r} is outside the allowed range {f.allowed()}; "
                          f"choose a value in that range")
    return value


def validate(table: dict, source: Path | None = None, where: str = "") -> Config:
    """Check a parsed rfbench table and merge it over the defaults.

    Parameters
    ----------
    table : dict
        Sections (``window``, ``adapt``, ...) mapping keys to values, as parsed from TOML.
    source : Path, optional
        The file it came from (relative dataset roots are resolved against its folder).
    where : str
        Prefix for messages, e.g. ``"rfbench.toml: "``.

    Raises
    ------
    ConfigError
        An unknown section or key, a wrong type or a value outside its bounds; the message names the key,
        the value and what is allowed.
    """
    values = {f.key: f.default for f in FIELDS}
    seen = set()
    base = source.parent if source is not None else None
    for section, entries in table.items():
        if section not in _SECTIONS:
            raise ConfigError(f"{where}unknown section [{section}]; known sections: {', '.join(_SECTIONS)}")
        if not isinstance(entries, dict):
            raise ConfigError(f"{where}{section} must be a table ([{section}]), got {entries!r}")
        for name, value in entries.items():
            key = f"{section}.{name}"
            f = _BY_KEY.get(key)
            if f is None:
                known = ", ".join(k.split(".", 1)[1] for k in _BY_KEY if k.startswith(section + "."))
                raise ConfigError(f"{where}unknown key {key}; keys of [{section}]: {known}")
            values[key] = _check_value(f, value, where, base)
            seen.add(key)
    return Config(values, source, frozenset(seen))


def load_config(path: str | os.PathLike | None = None, start: str | os.PathLike | None = None) -> Config:
    """Read and validate the config: ``path`` if given, else the one :func:`find_config` finds, else defaults."""
    source = Path(path) if path is not None else find_config(start)
    if source is None:
        return validate({})
    table = _table_of(source, parse_toml(source))
    return validate(table, source.resolve(), where=f"{source}: ")


def override(config: Config, values: dict, where: str = "command line: ") -> Config:
    """A copy of ``config`` with ``values`` (full keys such as ``"adapt.rank"``) replaced, validated exactly
    like a file's values (so command-line options obey the same bounds); ``None`` values are ignored."""
    table: dict = {}
    for key, value in {**config.values, **{k: v for k, v in values.items() if v is not None}}.items():
        if value is None:
            continue
        section, name = key.split(".", 1)
        table.setdefault(section, {})[name] = str(value) if isinstance(value, Path) else value
    checked = validate(table, None, where)
    return Config(checked.values, config.source, config.from_file)


def check_paths(config: Config) -> list[str]:
    """Problems with the dataset roots: each set root must be an existing folder."""
    problems = []
    for f in FIELDS:
        if f.kind == "path" and config[f.key] is not None:
            p = Path(config[f.key])
            if not p.is_dir():
                problems.append(f"{f.key} = {str(p)!r} is not an existing folder")
    return problems
