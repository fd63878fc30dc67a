"""Shared CLI plumbing: one-line errors with the right exit code, JSON on stdout, progress bars.

Errors go to stderr as a single line (``error: <message>``) and the process exits with the error's
``exit_code`` (DESIGN.md §1). Progress bars appear only when stderr is a terminal and ``--json`` is off.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Iterator

import typer

from rfbench.errors import RfbenchError

__all__ = ["guard", "fail", "emit_json", "progress", "stdout_console", "stderr_console"]


def stderr_console():
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def stdout_console():
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)  # long lines stay whole when piped; tables fit the width


def fail(message: str, code: int = 2) -> "typer.Exit":
    """Print ``error: message`` on stderr as one line and return the ``typer.Exit`` to raise."""
    one_line = " ".join(str(message).split())
    from rich.markup import escape

    stderr_console().print(f"[bold red]error:[/] {escape(one_line)}")
    return typer.Exit(code)


@contextlib.contextmanager
def guard() -> Iterator[None]:
    """Turn rfbench errors (and a few OS errors) into one stderr line and their exit code."""
    try:
        yield
    except RfbenchError as exc:
        for_cli = getattr(exc, "for_cli", None)  # a setting's error names its flag on the command line
        raise fail(for_cli() if for_cli is not None else str(exc), exc.exit_code) from None
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


@contextlib.contextmanager
def progress(total: int, description: str, enabled: bool = True):
    """Yield ``advance(n=1)``: a Rich progress bar on a terminal's stderr, a no-op otherwise."""
    if not enabled or total <= 1 or not sys.stderr.isatty():
        yield lambda n=1: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=stderr_console(),
        transient=True,
    ) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n=1: bar.advance(task, n)
