"""Usage errors in two lines for every command: ``error: <message>`` naming the option and what it allows, then
``Try 'rfbench CMD -h' for help.``, exit 2. The root command (:mod:`rfbench.cli`) hands Click's errors to
:func:`click_error_exit`; the number and range messages become short "must be ..." phrases, the same under the
Typer constraints.txt pins (Click's own types) and under Typer 0.29+ (pydantic's messages)."""

from __future__ import annotations

import re

import typer

from rfbench.commands._common import fail, one_line, stderr_console

__all__ = ["usage_error", "usage_message", "click_error_exit"]


def usage_error(message: str, command_path: str | None = None) -> int:
    """Print a usage error in two lines: ``error: message`` and ``Try 'COMMAND -h' for help.``; return 2."""
    from rich.markup import escape

    console = stderr_console()
    console.print(f"[bold red]error:[/] {escape(one_line(message))}")
    console.print(f"Try '{escape(one_line(command_path or 'rfbench'))} -h' for help.")
    return 2


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


# Click's number types ("'x' is not a valid integer.", "0 is not in the range x>=1."): the same phrases.
_CLICK_TYPES = (
    (re.compile(r"^(?P<got>.+?) is not a valid int(?:eger)?(?: range)?\.$"), "must be an integer"),
    (re.compile(r"^(?P<got>.+?) is not a valid float(?: range)?\.$"), "must be a number"),
    (re.compile(r"^(?P<got>.+?) is not a valid boolean\..*$"), "must be true or false"),
)
_CLICK_RANGE = re.compile(r"^(?P<got>\S+) is not in the range \S+\.$")


def _range_phrase(text: str, param) -> str | None:
    """"must be >= 1, got '0'" for Click's range message, naming the bound the value is past."""
    match = _CLICK_RANGE.match(text)
    kind = getattr(param, "type", None)
    if match is None or not hasattr(kind, "min") or not hasattr(kind, "max"):
        return None
    got = match["got"]
    try:
        value = float(got)
    except ValueError:
        return None
    low, high = kind.min, kind.max
    if low is not None and (value < low or (kind.min_open and value == low)):
        phrase = f"must be {'>' if kind.min_open else '>='} {low}"
    elif high is not None:
        phrase = f"must be {'<' if kind.max_open else '<='} {high}"
    else:  # pragma: no cover - Click reports a range only when a bound is crossed
        return None
    return f"{phrase}, got {got!r}"


def _click_phrase(text: str, param) -> str:
    ranged = _range_phrase(text, param)
    if ranged is not None:
        return ranged
    for pattern, phrase in _CLICK_TYPES:
        match = pattern.match(text)
        if match is not None:
            return f"{phrase}, got {match['got']}"
    return text


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
        text = _click_phrase(one_line(exc.message), param)
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
