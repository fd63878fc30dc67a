"""The progress bar every long command shows (on a terminal's stderr only) and the signal handling of the two
long jobs (parse, windows): a signal stops the job cleanly, its temporary files removed."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading

from rfbench._process import ENDING_SIGNALS

__all__ = ["Bar", "progress", "STOP_SIGNALS", "stop_on_signals", "signals_as_interrupt"]


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
        """Show the bar, ``total`` units long (nothing happens for ``total <= 1``); called again (a job of two
        walks), the bar starts over at ``total``."""
        if self._bar is not None:
            self._bar.reset(self._task, total=total)
            return
        if not self.enabled or total <= 1:
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        from rfbench.commands._common import stderr_console

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
STOP_SIGNALS = ENDING_SIGNALS


@contextlib.contextmanager
def stop_on_signals(cancel):
    """While the job runs, SIGINT, SIGTERM, SIGHUP and every other signal whose default ends the process
    (:data:`STOP_SIGNALS`) set ``cancel`` (the job then stops and cleans up) instead of killing the process;
    yields the list the first signal caught is appended to."""

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


class Signalled(KeyboardInterrupt):
    """A signal that ends the process by default, raised as an interrupt (:class:`signals_as_interrupt`): the
    command stops as on Ctrl-C and exits 128 + :attr:`signum`."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


class signals_as_interrupt:
    """SIGTERM, SIGHUP, SIGQUIT and every other signal whose default ends the process (:data:`STOP_SIGNALS`; SIGINT
    is Python's KeyboardInterrupt already) raise :class:`Signalled` in the main thread while outputs are written,
    so the temporary files are removed (as on Ctrl-C) and nothing half-written is left behind."""

    def __enter__(self):
        self._old = {}
        self._caught: list[int] = []
        self._hook = None
        if threading.current_thread() is threading.main_thread():
            for sig in STOP_SIGNALS:
                if sig != signal.SIGINT:
                    self._old[sig] = signal.signal(sig, self._raise)
            self._hook = sys.unraisablehook
            sys.unraisablehook = self._unraisable
        return self

    def _unraisable(self, unraisable):
        if not isinstance(unraisable.exc_value, Signalled):  # (a Signalled ignored is in _caught: see __exit__)
            self._hook(unraisable)

    def _raise(self, signum, frame):
        self._caught.append(signum)
        raise Signalled(signum)

    def __exit__(self, exc_type, exc, tb):
        for sig, old in self._old.items():
            signal.signal(sig, old)
        if self._hook is not None:
            sys.unraisablehook = self._hook
        if exc_type is None and self._caught:
            # the interrupt was raised where Python ignores exceptions (a weakref callback, a __del__) and the job
            # went on to its end: its outputs are whole, but the process was told to stop and says so (it exited
            # 0 after SIGTERM)
            raise Signalled(self._caught[0])
        return False
