"""Shared CLI plumbing: one-line errors with the right exit code, JSON on stdout, progress bars.

Errors go to stderr as a single line (``error: <message>``) and the process exits with the error's
``exit_code`` (DESIGN.md §1). A usage error (a missing argument, an unknown option or command, a value an
option does not allow) is at most two lines, ``error: <message>`` and ``Try 'rfbench CMD -h' for help.``, exit
2, for every command: the root command hands Click's errors to :func:`click_error_exit`. Every float option
parses with :func:`finite_float`, which refuses NaN and inf. Progress bars appear only when stderr is a
terminal and ``--json`` is off.
"""

from __future__ import annotations

import contextlib
import math
import re
import signal
import sys
import threading
from typing import Any, Callable, Iterator

import typer

from rfbench.errors import RfbenchError

__all__ = ["guard", "fail", "emit_json", "Bar", "progress", "stdout_console", "stderr_console", "one_line",
           "finite_float", "usage_error", "click_error_exit", "stop_on_signals", "sigterm_as_interrupt"]


def stderr_console():
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def stdout_console():
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)  # long lines stay whole when piped; tables fit the width


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def one_line(message: Any) -> str:
    """``message`` as one line: runs of whitespace (line breaks included) become one space, and other control
    characters (a terminal escape in a file name) are shown as ``\\xNN``."""
    text = " ".join(str(message).split())
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def cli_message(exc: RfbenchError) -> str:
    """A library error as the command line says it: parameters named in it become their options."""
    from rfbench.errors import for_cli
    from rfbench.settings import declared_flags

    own = getattr(exc, "for_cli", None)  # a setting's error names its flag itself
    return own() if own is not None else for_cli(str(exc), declared_flags())


def fail(message: str, code: int = 2) -> "typer.Exit":
    """Print ``error: message`` on stderr as one line and return the ``typer.Exit`` to raise; parameters a
    library message names in backticks are shown as their options."""
    from rich.markup import escape

    from rfbench.errors import for_cli
    from rfbench.settings import declared_flags

    stderr_console().print(f"[bold red]error:[/] {escape(one_line(for_cli(str(message), declared_flags())))}")
    return typer.Exit(code)


def usage_error(message: str, command_path: str | None = None) -> int:
    """Print a usage error in two lines: ``error: message`` and ``Try 'COMMAND -h' for help.``; return 2."""
    from rich.markup import escape

    console = stderr_console()
    console.print(f"[bold red]error:[/] {escape(one_line(message))}")
    console.print(f"Try '{escape(one_line(command_path or 'rfbench'))} -h' for help.")
    return 2


def finite_float(minimum: float | None = None, maximum: float | None = None) -> Callable[[Any], float]:
    """The parser of every float option (``typer.Option(..., parser=finite_float(0.0, 10.0))``).

    It accepts a finite number within ``[minimum, maximum]`` (either bound optional) and refuses NaN and inf
    with a message saying so (a NaN would otherwise pass or fail range checks by accident: every comparison
    with it is false). Typer's own ``min=``/``max=`` are not used with it: the bounds are given here.
    """

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


def _click_exceptions():
    try:
        from typer._click import exceptions  # Typer versions that vendor Click
    except ImportError:  # pragma: no cover - older Typer on the click package
        from click import exceptions
    return exceptions


# Typer validates numbers with pydantic; its messages become "must be ..." phrases.
_PHRASES = (
    (re.compile(r"^Input should be greater than or equal to (\S+?)\.?$"), r"must be >= \1"),
    (re.compile(r"^Input should be greater than (\S+?)\.?$"), r"must be > \1"),
    (re.compile(r"^Input should be less than or equal to (\S+?)\.?$"), r"must be <= \1"),
    (re.compile(r"^Input should be less than (\S+?)\.?$"), r"must be < \1"),
    (re.compile(r"^Input should be a valid integer.*$"), "must be an integer"),
    (re.compile(r"^Input should be a finite number.*$"), "must be a finite number (NaN and inf are not allowed)"),
    (re.compile(r"^Input should be a valid number.*$"), "must be a number"),
    (re.compile(r"^Input should be a valid boolean.*$"), "must be true or false"),
    (re.compile(r"^Value error, "), ""),
)


def _param_name(param) -> str:
    opts = [o for o in (getattr(param, "opts", None) or []) if o.startswith("--")] or getattr(param, "opts", None)
    if getattr(param, "param_type_name", "") == "argument" or not opts:
        return str(getattr(param, "name", None) or "value").upper()
    return opts[0]


def usage_message(exc) -> str:
    """One line for a Click usage error: what was wrong, naming the option or argument and what it allows."""
    E = _click_exceptions()
    param = getattr(exc, "param", None)
    if isinstance(exc, E.MissingParameter) and param is not None:
        extra = f": {exc.message}" if exc.message else ""
        return f"missing {param.param_type_name} {_param_name(param)}{extra}"
    if isinstance(exc, E.BadParameter) and param is not None:
        text = one_line(exc.message)
        for pattern, phrase in _PHRASES:
            text = pattern.sub(phrase, text)
        cause = exc.__cause__
        errors = getattr(cause, "errors", None)
        if callable(errors) and ", got " not in text:
            try:
                value = errors()[0].get("input")
            except (IndexError, AttributeError, TypeError):
                value = None
            if value is not None:
                text += f", got {value!r}"
        return f"invalid value for {_param_name(param)}: {text}"
    message = one_line(exc.format_message())
    return message[:1].lower() + message[1:]


def click_error_exit(exc: BaseException, command_path: str | None = None) -> int | None:
    """Report a Click error raised while parsing or running a command; return the exit code, or None when
    ``exc`` is not Click's (the caller re-raises it). ``command_path`` names the command for the help hint
    when the error carries no context."""
    E = _click_exceptions()
    if type(exc).__name__ == "NoArgsIsHelpError":  # the help was printed: a bare group or `rfbench` alone
        return 2
    if isinstance(exc, E.UsageError):
        ctx = getattr(exc, "ctx", None)
        return usage_error(usage_message(exc), ctx.command_path if ctx is not None else command_path)
    if isinstance(exc, E.ClickException):
        fail(exc.format_message(), exc.exit_code)
        return exc.exit_code
    if isinstance(exc, (typer.Abort, getattr(E, "Abort", typer.Abort))):
        fail("aborted", 1)
        return 1
    return None


@contextlib.contextmanager
def guard() -> Iterator[None]:
    """Turn rfbench errors (and a few OS errors) into one stderr line and their exit code."""
    try:
        yield
    except RfbenchError as exc:
        raise fail(cli_message(exc), exc.exit_code) from None
    except PermissionError as exc:
        raise fail(f"{exc.filename or ''}: permission denied", 2) from None
    except IsADirectoryError as exc:
        raise fail(f"{exc.filename or ''}: is a directory", 2) from None
    except FileNotFoundError as exc:
        raise fail(f"{exc.filename or ''}: no such file or directory", 2) from None
    except KeyboardInterrupt:
        raise fail("interrupted", 130) from None


def emit_json(obj: Any) -> None:
    """Print ``obj`` as one JSON document on stdout (NaN and inf become null)."""
    from rfbench.io.files import dumps_json

    sys.stdout.write(dumps_json(obj))
    sys.stdout.flush()


class Bar:
    """The one progress bar of every command: Rich, on a terminal's stderr only (a no-op when ``enabled`` is false,
    stderr is not a terminal, or there is at most one thing to do).

    Use as a context manager; the total may come later (:meth:`start`, e.g. once a tree has been walked).
    :meth:`advance` moves it; :meth:`step` names the current step of a multi-step job (finishing the previous
    one) and :meth:`detail` counts work inside a step (shown beside the step's name).
    """

    def __init__(self, description: str = "", total: int | None = None, enabled: bool = True):
        self.description = description
        self.enabled = enabled and sys.stderr.isatty()
        self._bar = self._task = None
        self._total = total
        self._step = ""
        self._count = 0

    def __enter__(self) -> "Bar":
        if self._total is not None:
            self.start(self._total)
        return self

    def start(self, total: int) -> None:
        """Show the bar, ``total`` units long (nothing happens for ``total <= 1``)."""
        if not self.enabled or total <= 1 or self._bar is not None:
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                             TimeElapsedColumn(), console=stderr_console(), transient=True)
        self._bar.__enter__()
        self._task = self._bar.add_task(self.description, total=total)

    def advance(self, n: int = 1) -> None:
        if self._bar is not None:
            self._bar.advance(self._task, n)

    def step(self, name: str) -> None:
        """Start the step ``name`` (the previous step counts as done)."""
        if self._bar is None:
            return
        if self._step:
            self._bar.advance(self._task)
        self._step, self._count = name, 0
        self._bar.update(self._task, description=name)

    def detail(self, n: int = 1) -> None:
        """Count ``n`` more units of work inside the current step."""
        if self._bar is None:
            return
        self._count += n
        self._bar.update(self._task, description=f"{self._step} ({self._count})")

    def __exit__(self, *exc) -> bool:
        if self._bar is not None:
            self._bar.__exit__(*exc)
        return False


@contextlib.contextmanager
def progress(total: int, description: str, enabled: bool = True):
    """Yield ``advance(n=1)`` of a :class:`Bar` of ``total`` units."""
    with Bar(description, total, enabled) as bar:
        yield bar.advance


#: The signals a long job stops cleanly on (its temporary files removed), exiting 128 + the signal number.
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


@contextlib.contextmanager
def stop_on_signals(cancel):
    """While the job runs, SIGINT, SIGTERM and SIGHUP set ``cancel`` (the job then stops and cleans up)
    instead of killing the process; yields the list the first signal caught is appended to."""
    import threading

    caught: list = []
    if threading.current_thread() is not threading.main_thread():  # signals are only delivered to the main thread
        yield caught
        return

    def handler(signum, frame):
        if not caught:
            caught.append(signum)
        cancel.set()

    previous = {}
    try:
        for sig in STOP_SIGNALS:
            previous[sig] = signal.signal(sig, handler)
        yield caught
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


class sigterm_as_interrupt:
    """SIGTERM raises KeyboardInterrupt in the main thread while outputs are written, so the temporary files are
    removed (as on Ctrl-C) and nothing half-written is left behind."""

    def __enter__(self):
        self._old = None
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGTERM, self._raise)
        return self

    @staticmethod
    def _raise(signum, frame):
        raise KeyboardInterrupt

    def __exit__(self, *exc):
        if self._old is not None:
            signal.signal(signal.SIGTERM, self._old)
        return False


def with_settings(command, impl, *settings_classes) -> None:
    """Give ``command`` (``def command(**values)``) the options Typer reads: ``impl``'s own parameters (the first
    positional, the rest keyword-only) followed by the fields of ``settings_classes``, and ``impl``'s docstring."""
    import inspect

    from rfbench.settings import typer_parameters

    own = [p for p in inspect.signature(impl, eval_str=True).parameters.values() if p.kind is not p.VAR_KEYWORD]
    first, rest = own[0], [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own[1:]]
    command.__signature__ = inspect.Signature([first] + rest + typer_parameters(*settings_classes))
    command.__doc__ = impl.__doc__
