"""Process-level start-up and shutdown tweaks for the long jobs the command line runs (``rfbench parse``,
``rfbench windows``): the library's functions work without them; each is measured where it is described."""

from __future__ import annotations

import contextlib
import signal

__all__ = ["load_kernels", "cheap_exit", "collector_paused", "stream_to_null", "ENDING_SIGNALS"]

#: The signals whose default ends the process that rfbench catches to stop cleanly (temporary files removed,
#: children stopped, exit 128 + the signal number): every catchable one sent to a process from outside — those
#: that dump core by default too (Ctrl-\ is SIGQUIT) — but the faults of the process itself (SIGSEGV, SIGBUS,
#: SIGFPE, SIGILL: a handler that returns runs the faulting instruction again), SIGPIPE (Python ignores it) and
#: the resource limits' SIGXCPU and SIGXFSZ (a re-run over its CPU-time limit ends as the limit says).
ENDING_SIGNALS = tuple(getattr(signal, name) for name in (
    "SIGTERM", "SIGHUP", "SIGINT", "SIGQUIT", "SIGALRM", "SIGUSR1", "SIGUSR2", "SIGVTALRM", "SIGPROF", "SIGIO",
    "SIGPWR", "SIGSTKFLT", "SIGABRT", "SIGTRAP", "SIGSYS") if hasattr(signal, name))


def load_kernels() -> None:
    """Load the Intel 5300 parser's compiled kernels (and so start Numba's CPU target) before the job starts,
    without letting Numba import SciPy. ``rfbench parse`` and ``rfbench windows`` call it first.

    When Numba's CPU target first starts it imports ``scipy.linalg`` only to learn whether BLAS is there for
    ``np.correlate``/``np.convolve`` (``numba.np.arraymath._HAVE_BLAS``; every other BLAS use imports it when
    compiling). The parser needs no BLAS, and that import is a large part of a command's start-up: hidden
    for that moment, the start-up took 16 % less CPU (whole-process measurement, 10 paired runs).
    """
    import sys

    from rfbench.io import intel5300

    hide = "scipy.linalg" not in sys.modules
    if hide:
        sys.modules["scipy.linalg"] = None  # an import of it raises ImportError meanwhile
    try:
        intel5300.read(b"")  # frames and unpacks nothing: loads the kernels and starts the target
    finally:
        if hide and sys.modules.get("scipy.linalg", False) is None:
            del sys.modules["scipy.linalg"]


def cheap_exit() -> None:
    """Skip the garbage collector's passes over Numba's objects when the interpreter exits.

    At exit Python collects cyclic garbage over every tracked object, and after Numba has started that is a
    large part of a short job's time: freezing the tracked objects first (``gc.freeze``, once, from ``atexit``,
    which runs before those passes) made the process of a one-file parse take 20 % less CPU (whole-process
    measurement, 8 paired runs). It only changes what happens at exit: output is flushed and files are closed
    as before (their objects are freed by reference counting, not by the collector).
    """
    import atexit
    import gc

    if not getattr(cheap_exit, "registered", False):
        atexit.register(gc.freeze)
        cheap_exit.registered = True


@contextlib.contextmanager
def collector_paused():
    """No cyclic garbage collection while the job runs (its objects are freed by reference counting): a full
    collection would traverse every object Numba created at start-up, again and again. Restored afterwards."""
    import gc

    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def stream_to_null(stream) -> None:
    """Point ``stream``'s file descriptor at the null device: a stream that cannot take what is still buffered (a
    reader gone, a full disk) then cannot make the interpreter's own last flush fail, which would print its own
    message and turn the command's exit code into 120. A stream with no real file behind it (a test's capture)
    is left as it is."""
    import os

    try:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, stream.fileno())
        finally:
            os.close(null)
    except (OSError, ValueError, AttributeError):
        pass
