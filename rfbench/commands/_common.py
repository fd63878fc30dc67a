"""Shared CLI plumbing: one-line errors with the right exit code, JSON on stdout, float options.

Errors go to stderr as a single line (``error: <message>``) and the process exits with the error's
``exit_code`` (DESIGN.md §1); usage errors are :mod:`rfbench.commands._usage`'s, progress bars and signal
handling :mod:`rfbench.commands._progress`'s. Every float option parses with
:func:`rfbench.settings.finite_float` (importable from here too), which refuses NaN and inf; every option naming
one file to write parses with :func:`output_file`, which refuses a path written as a folder (``out/``).
"""

from __future__ import annotations

import contextlib
import re
import sys
from typing import Any, Iterator

import typer

from rfbench.errors import RfbenchError
from rfbench.report.render import INVISIBLE_CHARS
from rfbench.settings import finite_float  # noqa: F401 (the float parser: declared with the settings)

__all__ = ["guard", "fail", "emit_json", "stdout_console", "stderr_console", "one_line", "cli_message", "finite_float",
           "with_settings", "clean_text", "output_file",
           "output_text"]


#: The narrowest a console is made (``COLUMNS`` can say 0).
MIN_WIDTH = 20


def _console_class():
    """A Rich console that never writes a control character it did not make itself: the text of every segment
    (a report's strings, a file name, a label from a manifest) has its terminal controls shown as ``\\xNN``
    (:func:`clean_text`), while Rich's own styling and cursor controls stay as they are. Made with
    ``broken_pipe=True``, a closed pipe raises ``BrokenPipeError`` (for :func:`verdict_output`); else stdout is
    pointed at the null device and the command goes on (Rich would end the process with exit 1)."""
    from rich.console import Console
    from rich.segment import Segment

    class SafeConsole(Console):
        def __init__(self, *args, broken_pipe: bool = False, **kwargs):
            super().__init__(*args, **kwargs)
            self._raise_broken_pipe = broken_pipe
            if self.width < MIN_WIDTH:  # COLUMNS=0 made a width of 0: a MISMATCH printed nothing, not even its line
                self.width = MIN_WIDTH

        def _render_buffer(self, buffer):
            return super()._render_buffer(Segment(clean_text(text), style, control) if not control else
                                          Segment(text, style, control) for text, style, control in buffer)

        def on_broken_pipe(self) -> None:
            if self._raise_broken_pipe:
                raise BrokenPipeError(32, "Broken pipe")
            # the reader stopped (| head): the rest is not printed and the command goes on to its own exit code
            # (Rich's exit 1 is the code of a failed check: a comparison piped into head read as a mismatch)
            from rfbench._process import stream_to_null

            stream_to_null(sys.stdout)

    return SafeConsole


def stderr_console():
    return _console_class()(stderr=True, highlight=False, soft_wrap=True)


def stdout_console(broken_pipe: bool = False):
    # long lines stay whole when piped; tables fit the width
    return _console_class()(highlight=False, soft_wrap=True, broken_pipe=broken_pipe)


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: What a terminal obeys rather than shows, besides line breaks and tabs: C0 and C1 controls (ESC starts the
#: sequences that move the cursor or erase lines), DEL, the characters report.md also escapes (bidirectional
#: overrides and marks that reorder text, zero-width characters that hide in it: ``INVISIBLE_CHARS``), and lone
#: surrogates (a JSON ``\udc80``), which no terminal encoding can write.
_TERMINAL_CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{INVISIBLE_CHARS}\ud800-\udfff]")


def clean_text(text: str) -> str:
    """``text`` with every character a terminal would obey instead of show (:data:`_TERMINAL_CONTROL`) written as
    a visible escape (``\\x1b``, ``\\u202e``); line breaks and tabs stay."""
    if not _TERMINAL_CONTROL.search(text):
        return text
    return _TERMINAL_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                                 else f"\\u{ord(m.group()):04x}", text)


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

    try:
        stderr_console().print(f"[bold red]error:[/] {escape(one_line(for_cli(str(message), declared_flags())))}")
    except OSError:  # stderr cannot take the line (a full disk): the exit code still says what happened
        from rfbench._process import stream_to_null

        stream_to_null(sys.stderr)
    return typer.Exit(code)


@contextlib.contextmanager
def guard() -> Iterator[None]:
    """Turn rfbench errors (and a few OS errors) into one stderr line and their exit code."""
    try:
        yield
    except RfbenchError as exc:
        raise fail(cli_message(exc), exc.exit_code) from None
    except (PermissionError, IsADirectoryError, FileNotFoundError) as exc:
        what = {PermissionError: "permission denied", IsADirectoryError: "is a directory"}.get(
            type(exc), "no such file or directory")
        if exc.filename is None:  # no path to name (tempfile found no usable temporary folder): its own words
            text = exc.strerror or str(exc) or what
            raise fail(text[:1].lower() + text[1:], 2) from None
        raise fail(f"{exc.filename}: {what}", 2) from None
    except OSError as exc:  # a name too long, a link loop, an I/O error: a path someone gave, one line
        what = (exc.strerror or str(exc)).lower()
        raise fail(f"{exc.filename}: {what}" if exc.filename else what, 2) from None
    except ValueError as exc:  # os.* refuses a path holding NUL before any system call
        if "embedded null" not in str(exc):
            raise
        raise fail("a path read from an input holds a NUL byte, which no file name can hold: that input is "
                   "malformed", 2) from None
    except UnicodeEncodeError as exc:  # a JSON "\ud800" no file name can be written as
        if exc.reason != "surrogates not allowed":
            raise
        raise fail("a path read from an input holds an unpaired surrogate (a \\ud800-\\udfff escape), which no "
                   "file name can hold: that input is malformed", 2) from None
    except RuntimeError as exc:  # Python wraps what is raised while a class is made (a Ctrl-C, a SIGTERM then)
        cause = exc.__cause__
        if isinstance(cause, KeyboardInterrupt):
            raise fail("interrupted", 128 + getattr(cause, "signum", 2)) from None
        if isinstance(cause, RfbenchError):
            raise fail(cli_message(cause), cause.exit_code) from None
        raise
    except MemoryError:  # an address-space limit (ulimit -v, a container's) met by a large or hostile input
        raise fail("out of memory: this input needs more memory than the process may use (its address-space "
                   "limit, or the machine's)", 2) from None
    except KeyboardInterrupt as exc:  # Ctrl-C, or another signal raised as one (exit 128 + its number)
        raise fail("interrupted", 128 + getattr(exc, "signum", 2)) from None


@contextlib.contextmanager
def verdict_output(code: int, end: bool = True) -> Iterator[None]:
    """Print a verdict whose exit code is ``code`` (verify: 0 MATCH, 1 MISMATCH) inside this block: stdout that
    cannot be written (a reader that closed the pipe, ``| head``; a full disk) never changes the exit code — a
    MATCH piped into ``head`` was exit 1, the code of a forged report, and a MISMATCH written to a full disk exit
    2, that of bad input. A closed pipe is silent (its reader chose to stop); any other failure is one stderr
    line. The block then ends the command with ``code`` or, with ``end=False``, lets the caller go on (a
    MISMATCH raises its error next, whose one line goes to stderr)."""
    try:
        yield
        sys.stdout.flush()
    except OSError as exc:
        from rfbench._process import stream_to_null

        stream_to_null(sys.stdout)  # its buffered rest can no longer fail the interpreter's last flush
        if not isinstance(exc, BrokenPipeError):
            what = (exc.strerror or str(exc)).lower()
            try:
                sys.stderr.write(f"error: the verdict could not be written to stdout ({what}); the exit code {code} "
                                 "is the verdict\n")
                sys.stderr.flush()
            except OSError:
                pass
        if end:
            raise typer.Exit(code) from None


def output_file(value: Any) -> Any:
    """The parser of every option naming one file to write (``typer.Option(..., parser=output_file)``): a
    ``Path``, after refusing a path written with a trailing ``/``
    (:func:`rfbench.io.files.refuse_folder_name`), which names a folder: ``Path("out/")`` is ``out``, and the
    file would be written under the name of the folder the user meant."""
    from pathlib import Path

    from rfbench.io.files import refuse_folder_name

    try:
        refuse_folder_name(str(value))
    except RfbenchError as exc:
        raise typer.BadParameter(str(exc)) from None
    return Path(value)


def output_text(value: Any) -> str:
    """The parser of an option naming a file or a folder to write (``split --out``): the text as given, for the
    library to tell the two apart by a trailing ``/`` (an annotation of ``Path`` would drop it)."""
    return str(value)


# Help shows a parser's name as its option's type: `<path>`, as for every other path option; the mark tells them
# from the float parsers (:func:`finite_float`) when every option is walked.
output_file.__name__ = output_text.__name__ = "path"
output_file.rfbench_path = output_text.rfbench_path = True


def emit_json(obj: Any) -> None:
    """Print ``obj`` as one JSON document on stdout (NaN and inf become null)."""
    from rfbench.io.files import dumps_json

    try:
        sys.stdout.write(dumps_json(obj))
        sys.stdout.flush()
    except BrokenPipeError:  # the reader stopped (| head): the command keeps its own exit code, as on a console
        from rfbench._process import stream_to_null

        stream_to_null(sys.stdout)


def with_settings(command, impl, *settings_classes) -> None:
    """Give ``command`` (``def command(**values)``) the options Typer reads: ``impl``'s own parameters (the first
    positional, the rest keyword-only) followed by the fields of ``settings_classes``, and ``impl``'s docstring."""
    import inspect

    from rfbench.settings import typer_parameters

    own = [p for p in inspect.signature(impl, eval_str=True).parameters.values() if p.kind is not p.VAR_KEYWORD]
    first, rest = own[0], [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own[1:]]
    command.__signature__ = inspect.Signature([first] + rest + typer_parameters(*settings_classes))
    command.__doc__ = impl.__doc__
