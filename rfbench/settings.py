"""Settings declared once: frozen dataclasses whose fields carry their option, default, bounds and help.

A settings class lists what one stage takes::

    @dataclass(frozen=True)
    class BootstrapSettings(Settings):
        replicates: int = setting(1000, "Cluster-bootstrap replicates (0 = no intervals).", flag="--bootstrap",
                                  min=0, max=MAX_REPLICATES)

Everything else is derived from the fields: the command line's options (:func:`typer_parameters`), the
canonical argv a report records and ``rfbench verify`` re-runs (:meth:`Settings.argv`), the parsing of that
argv back (:meth:`Settings.from_cli`), and the checks every instance passes when it is made
(:meth:`Settings.__post_init__`: types, bounds, choices, finiteness), so the library, the command line and a
re-run can never disagree about a default or a bound. A test walks every field of every settings class.

Kinds of values (``kind``, inferred from the default when not given):

- ``int``, ``float``, ``str``, ``bool`` (a flag: on the command line ``--flag``, in argv only when true);
- ``floats``, ``ints``, ``strs``: tuples, written on the command line as comma-separated lists;
- ``path``: a file, an input of the stage (its ``role`` names it in a report's inputs).

A value whose default is ``None`` is optional: it appears in argv only when given. Errors are
:class:`SettingError` — a :class:`~rfbench.errors.ValidationError` that knows the field and its flag, so the
library speaks of fields and the command line of flags.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from rfbench.errors import ValidationError

__all__ = ["Option", "setting", "Settings", "SettingError", "typer_parameters", "options_of", "declared_flags",
           "finite_float"]

_LIST_KINDS = {"floats": float, "ints": int, "strs": str}


class SettingError(ValidationError):
    """A setting's value is not allowed. ``field`` is its name in the settings class, ``flag`` its option on the
    command line; ``str()`` speaks of the field (``auc_n``), :meth:`for_cli` of the flag (``--auc-n``)."""

    def __init__(self, owner: str, name: str, flag: str, detail: str):
        super().__init__(f"{owner}.{name}: {detail}")
        self.owner, self.field, self.flag, self.detail = owner, name, flag, detail

    def for_cli(self) -> str:
        return f"{self.flag}: {self.detail}"


@dataclass(frozen=True)
class Option:
    """How one field appears on the command line and in a recorded argv."""

    help: str
    flag: str | None = None
    short: str | None = None
    kind: str | None = None
    min: float | None = None
    max: float | None = None
    min_open: bool = False
    max_open: bool = False
    choices: tuple | None = None
    aliases: Mapping[str, str] | None = None
    role: str | None = None
    tasks: tuple | None = None
    group: str | None = None
    metavar: str | None = None
    distinct: bool = False  # a list whose values must differ (each metric, threshold or normalization once)

    def describe(self) -> str:
        """The allowed values in words."""
        if self.choices:
            return "one of " + ", ".join(map(str, self.choices))
        lo = "" if self.min is None else f"{self.min:g}" + (" <" if self.min_open else " <=")
        hi = "" if self.max is None else ("< " if self.max_open else "<= ") + f"{self.max:g}"
        if lo and hi:
            return f"{lo} x {hi}"
        return f"x {'>' if self.min_open else '>='} {self.min:g}" if lo else (f"x {hi}" if hi else "any value")


def setting(default: Any, help: str, **option: Any) -> Any:
    """A dataclass field with its command-line :class:`Option` (see the module docstring)."""
    return field(default=default, metadata={"rfbench": Option(help=help, **option)})


def _opt(f: dataclasses.Field) -> Option:
    return f.metadata["rfbench"]


def _kind(f: dataclasses.Field) -> str:
    o = _opt(f)
    if o.kind:
        return o.kind
    d = f.default
    if isinstance(d, bool):
        return "bool"
    if isinstance(d, int):
        return "int"
    if isinstance(d, float):
        return "float"
    if isinstance(d, tuple):
        return "strs" if not d or isinstance(d[0], str) else ("ints" if isinstance(d[0], int) else "floats")
    return "str"


def flag_of(f: dataclasses.Field) -> str:
    return _opt(f).flag or "--" + f.name.replace("_", "-")


def options_of(cls) -> list[tuple[dataclasses.Field, Option]]:
    """``(field, option)`` of every declared setting of ``cls`` (a :class:`Settings` subclass), in order."""
    return [(f, _opt(f)) for f in fields(cls) if "rfbench" in f.metadata]


def _number(value: Any, kind: str) -> Any:
    if isinstance(value, bool):
        raise ValueError("a truth value is not a number")
    if kind == "int":
        if isinstance(value, float) or not isinstance(value, (int,)) and not hasattr(value, "__index__"):
            raise ValueError("not an integer")
        return int(value)
    value = float(value)
    if not math.isfinite(value):
        raise ValueError("NaN and infinity are not allowed")
    return value + 0.0  # -0.0 is 0.0 (a threshold of -0 would print as one in every label)


def _format_number(value: Any) -> str:
    return repr(float(value)) if isinstance(value, float) else str(value)


class Settings:
    """Base of settings dataclasses (``@dataclass(frozen=True)`` subclasses declaring fields with
    :func:`setting`). Every instance is checked when made."""

    def __post_init__(self):
        owner = type(self).__name__
        for f, o in options_of(type(self)):
            value = getattr(self, f.name)
            kind = _kind(f)
            fail = lambda detail: SettingError(owner, f.name, flag_of(f), detail)  # noqa: E731, B023 (used in this pass)
            if value is None:
                if f.default is not None:
                    raise fail("a value is required")
                continue
            try:
                if kind in ("int", "float"):
                    value = _number(value, kind)
                    self._check_range(value, o, fail)
                elif kind == "bool":
                    if not isinstance(value, bool):
                        raise fail(f"must be true or false, got {value!r}")
                elif kind == "path":
                    if not isinstance(value, (str, os.PathLike)):
                        raise fail(f"must be a path, got {type(value).__name__}")
                    value = Path(value)
                elif kind in _LIST_KINDS:
                    if isinstance(value, str):
                        value = _split_list(value, kind)
                    value = tuple(value)
                    if not value:
                        raise fail("must list at least one value")
                    conv = _LIST_KINDS[kind]
                    value = tuple(_number(v, "int" if conv is int else "float") if conv is not str else str(v)
                                  for v in value)
                    for v in value:
                        if conv is str:
                            self._check_choice(v, o, fail)
                        else:
                            self._check_range(v, o, fail)
                    if o.distinct and len(set(value)) != len(value):
                        seen: set = set()
                        twice = next(v for v in value if v in seen or seen.add(v))
                        raise fail(f"lists {twice!r} twice; give each value once")
                else:
                    if not isinstance(value, str):
                        raise fail(f"must be text, got {type(value).__name__}")
                    if o.aliases and value.strip() in o.aliases:
                        value = o.aliases[value.strip()]
                    self._check_choice(value, o, fail)
            except SettingError:
                raise
            except ValueError as exc:
                raise fail(f"{exc} (got {value!r})") from None
            object.__setattr__(self, f.name, value)
        self.check()

    @staticmethod
    def _check_range(value, o: Option, fail) -> None:
        if o.min is not None and (value < o.min or (o.min_open and value == o.min)):
            raise fail(f"{value!r} is not allowed ({o.describe()})")
        if o.max is not None and (value > o.max or (o.max_open and value == o.max)):
            raise fail(f"{value!r} is not allowed ({o.describe()})")

    @staticmethod
    def _check_choice(value, o: Option, fail) -> None:
        if o.choices and value not in o.choices:
            raise fail(f"{value!r} is not one of {', '.join(map(str, o.choices))}")

    def check(self) -> None:
        """Checks across fields (override)."""

    # -- argv ----------------------------------------------------------------------------------------------

    def argv(self, names: Iterable[str] | None = None, show_path: Callable[[Path], str] = str) -> list[str]:
        """The canonical command-line arguments of these settings: every field in declaration order (or the
        ``names`` given), ``--flag value``; optional fields only when given, flags only when true."""
        wanted = None if names is None else list(names)
        out: list[str] = []
        chosen = [(f, o) for f, o in options_of(type(self)) if wanted is None or f.name in wanted]
        if wanted is not None:
            chosen.sort(key=lambda fo: wanted.index(fo[0].name))
        for f, _o in chosen:
            value = getattr(self, f.name)
            kind = _kind(f)
            if value is None:
                continue
            if kind == "bool":
                if value:
                    out.append(flag_of(f))
                continue
            if kind == "path":
                text = show_path(value)
            elif kind in _LIST_KINDS:
                text = ",".join(_format_number(v) if not isinstance(v, str) else v for v in value)
            else:
                text = _format_number(value) if not isinstance(value, str) else value
            out += [flag_of(f), text]
        return out

    @classmethod
    def from_cli(cls, **values: Any):
        """An instance from command-line values (strings for lists, as typed), checked."""
        return cls(**{k: v for k, v in values.items() if k in {f.name for f in fields(cls)}})

    @classmethod
    def given(cls, values: Mapping[str, Any]) -> list[str]:
        """Names of this class's fields whose ``values`` (as typed on the command line) differ from the
        defaults."""
        out = []
        for f, _ in options_of(cls):
            if f.name not in values:
                continue
            default = f.default
            if isinstance(default, tuple):
                default = ",".join(_format_number(v) if not isinstance(v, str) else v for v in default)
            if values[f.name] != default:
                out.append(f.name)
        return out

    def to_dict(self) -> dict[str, Any]:
        """The settings as JSON-ready values (paths as text)."""
        out = {}
        for f, _ in options_of(type(self)):
            v = getattr(self, f.name)
            out[f.name] = str(v) if isinstance(v, Path) else (list(v) if isinstance(v, tuple) else v)
        return out


def _split_list(text: str, kind: str) -> tuple:
    items = [t.strip() for t in str(text).split(",") if t.strip()]
    if kind == "strs":
        return tuple(items)
    conv = int if kind == "ints" else float
    out = []
    for t in items:
        try:
            out.append(conv(t))
        except ValueError:
            raise ValueError(f"{t!r} is not {'an integer' if conv is int else 'a number'}") from None
    return tuple(out)


def finite_float(minimum: float | None = None, maximum: float | None = None) -> Callable[[Any], float]:
    """The parser of every float option (``typer.Option(..., parser=finite_float(0.0, 10.0))``).

    It accepts a finite number within ``[minimum, maximum]`` (either bound optional) and refuses NaN and inf
    with a message saying so (a NaN would otherwise pass or fail range checks by accident: every comparison
    with it is false). Typer's own ``min=``/``max=`` are not used with it: the bounds are given here. It lives
    with the settings, whose float fields it parses (:func:`typer_parameters`); the commands use it for their
    other float options (``rfbench.commands._common`` re-exports it).
    """
    import typer

    def parse(value: Any) -> float:
        if isinstance(value, bool):
            raise typer.BadParameter(f"must be a number, got {value!r}")
        if isinstance(value, (int, float)):
            number = float(value)
        else:
            try:
                number = float(str(value).strip())
            except ValueError:
                raise typer.BadParameter(f"must be a number, got {value!r}") from None
        if not math.isfinite(number):
            raise typer.BadParameter(f"must be a finite number (NaN and inf are not allowed), got {value!r}")
        if minimum is not None and number < minimum:
            raise typer.BadParameter(f"must be >= {minimum:g}, got {value!r}")
        if maximum is not None and number > maximum:
            raise typer.BadParameter(f"must be <= {maximum:g}, got {value!r}")
        return number

    parse.rfbench_finite_float = (minimum, maximum)  # type: ignore[attr-defined]  # found by the tests' walk
    return parse


def typer_parameters(*classes, only: Mapping[type, Iterable[str]] | None = None,
                     required: Iterable[str] = ()) -> list[inspect.Parameter]:
    """Keyword-only ``inspect.Parameter`` objects, ``Annotated[..., typer.Option(...)]``, for the fields of
    ``classes`` in order; a field name shared by several classes (with the same flag) appears once, its help
    texts joined. Lists are typed as text (comma-separated) and parsed by the settings class. Fields named in
    ``required`` must be given on the command line."""
    required = set(required)
    from typing import Annotated, Optional

    import typer

    seen: dict[str, dict] = {}
    for cls in classes:
        names = None if only is None or cls not in only else set(only[cls])
        for f, o in options_of(cls):
            if names is not None and f.name not in names:
                continue
            if f.name in seen:
                if seen[f.name]["flag"] != flag_of(f):
                    raise TypeError(f"{f.name} has two flags: {seen[f.name]['flag']} and {flag_of(f)}")
                if o.help not in seen[f.name]["help"]:
                    seen[f.name]["help"].append(o.help)
                continue
            seen[f.name] = {"field": f, "opt": o, "flag": flag_of(f), "help": [o.help]}
    params = []
    for name, info in seen.items():
        f, o = info["field"], info["opt"]
        kind = _kind(f)
        decls = [info["flag"]] + ([o.short] if o.short else [])
        kw: dict[str, Any] = {"help": " ".join(info["help"]), "show_default": f.default is not None}
        if o.metavar:
            kw["metavar"] = o.metavar
        default = f.default
        if kind == "int":
            py = int
            # closed bounds are checked by the parser too; open ones by the settings class alone
            if o.min is not None and not o.min_open:
                kw["min"] = int(o.min)
            if o.max is not None and not o.max_open:
                kw["max"] = int(o.max)
        elif kind == "float":
            py = float  # parsed by finite_float: NaN and inf are refused, closed bounds checked
            kw["parser"] = finite_float(None if o.min is None or o.min_open else float(o.min),
                                        None if o.max is None or o.max_open else float(o.max))
        elif kind == "bool":
            py = bool
        elif kind == "path":
            py = Path
        else:
            py = str
            if kind in _LIST_KINDS and isinstance(default, tuple):
                default = ",".join(_format_number(v) if not isinstance(v, str) else v for v in default)
        if name in required:
            annotation, default = Annotated[py, typer.Option(*decls, **dict(kw, show_default=False))], ...
        else:
            annotation = Annotated[Optional[py] if default is None else py, typer.Option(*decls, **kw)]
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                        annotation=annotation))
    return params


def declared_flags() -> dict[str, str]:
    """Field name → flag of every settings class defined so far whose flag is not the default
    ``--name-with-dashes`` (``replicates`` → ``--bootstrap``): how a library message's parameter names map to the
    command line (:func:`rfbench.errors.for_cli`)."""
    out: dict[str, str] = {}
    stack = list(Settings.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if not dataclasses.is_dataclass(cls):
            continue
        for f, _ in options_of(cls):
            flag = flag_of(f)
            if flag != "--" + f.name.replace("_", "-"):
                out.setdefault(f.name, flag)
    return out
