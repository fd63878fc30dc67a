"""Shared CLI plumbing: one-line errors with the right exit code, JSON on stdout, progress bars.

Errors go to stderr as a single line (``error: <message>``) and the process exits with the error's
``exit_code`` (DESIGN.md §1). Progress bars appear only when stderr is a terminal and ``--json`` is off.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from typing import Any, Iterator

import typer

from rfbench.errors import RfbenchError

__all__ = ["guard", "fail", "emit_json", "Bar", "progress", "stdout_console", "stderr_console"]


def stderr_console():
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def stdout_console():
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)  # long lines stay whole when piped; tables fit the width


def cli_message(exc: RfbenchError) -> str:
    """A library error as the command line says it: parameters named in it become their options."""
    from rfbench.errors import for_cli
    from rfbench.settings import declared_flags

    own = getattr(exc, "for_cli", None)  # a setting's error names its flag itself
    return own() if own is not None else for_cli(str(exc), declared_flags())


def fail(message: str, code: int = 2) -> "typer.Exit":
    """Print ``error: message`` on stderr as one line and return the ``typer.Exit`` to raise; parameters a
    library message names in backticks are shown as their options."""
    from rfbench.errors import for_cli
    from rfbench.settings import declared_flags

    one_line = " ".join(for_cli(str(message), declared_flags()).split())
    from rich.markup import escape

    stderr_console().print(f"[bold red]error:[/] {escape(one_line)}")
    return typer.Exit(code)


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
