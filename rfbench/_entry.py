"""The ``rfbench`` console script and ``python -m rfbench``: Ctrl-C while the command line is still loading (the
first few tenths of a second, before any command installs its own handling) ends the process with one line
and exit 130, as it does later, never with a traceback from inside an import.

Before anything else is imported, the current folder leaves Python's import path: an empty or relative entry
(an empty ``PYTHONPATH`` entry, as ``export PYTHONPATH=$PYTHONPATH:/opt/lib`` leaves when the variable was
unset, means the current folder) or the current folder itself. rfbench and its libraries are imported from where
they are installed, never from the folder a command runs in: run from a report folder someone handed over with
such a ``PYTHONPATH``, a ``typer.py`` beside the report ran inside ``rfbench verify`` and printed a MATCH.
(``python -I -m rfbench`` keeps the current folder off the path from the start.)

Variables that make Python itself import or run code from a place they name (:data:`CODE_ENV`: ``PYTHONPATH``,
``PYTHONHOME``, ``PYTHONPYCACHEPREFIX``...) are acted on before any program's first line: a ``sitecustomize.py``
that ``PYTHONPATH`` reaches is imported when the interpreter starts, and one shipped with a report installed an
import hook that made ``rfbench verify`` print MATCH for a forged accuracy. When one is set, the command starts
again at once in Python's isolated mode (``-I``: ``PYTHON*`` variables, the user's site folder and the script's
folder ignored), so nothing the first start imported stays in effect; ``rfbench verify`` also refuses such a
variable that names a place in the verify root (a hook that subverts even the new start is code the verifier's own
environment told Python to run: see docs/verify.md)."""

from __future__ import annotations

import os
import sys


def drop_current_folder(path: list[str]) -> list[str]:
    """``path`` (an import path) without the entries that name the current folder or a folder in it: empty ones,
    relative folders and the current folder itself. (Entries that are no folder stay: an editable install's
    path hook is one.)"""
    try:
        here = os.path.realpath(os.getcwd())
    except OSError:  # the current folder was removed: nothing can be imported from it
        here = None

    def from_here(p: str) -> bool:
        if not p:
            return True
        if not os.path.isabs(p):
            return os.path.isdir(p)
        return os.path.realpath(p) == here

    return [p for p in path if not from_here(p)]


def ran_as_module(orig_argv: list[str]) -> bool:
    """Whether the interpreter's own command line (``sys.orig_argv``) runs rfbench or one of its modules with
    ``-m`` (``python -m rfbench``, ``python -I -mrfbench.x``), not another program that imports rfbench."""
    k = 1
    while k < len(orig_argv):
        arg = orig_argv[k]
        if arg == "--check-hash-based-pycs":
            k += 2
            continue
        if not arg.startswith("-") or arg in ("-", "--") or arg.startswith("--"):
            return False  # a script, stdin, or a long option Python does not have: its options end here
        for j, flag in enumerate(arg[1:], start=2):  # a cluster of short options: -I, -Im, -W error, -Xdev...
            if flag == "c":
                return False  # -c's program
            if flag in "mWX":
                value = arg[j:] or (orig_argv[k + 1] if k + 1 < len(orig_argv) else "")
                if flag == "m":
                    return value == "rfbench" or value.startswith("rfbench.")
                k += 0 if arg[j:] else 1  # the value was the next word
                break
        k += 1
    return False


#: Variables with which Python imports, reads or runs code from a place they name, or runs a hook of their
#: choosing: the import path, another standard library, the user's site folder, the bytecode cache's folder,
#: a start-up file, warnings turned into errors and ``breakpoint()``'s hook. Any of them set (not empty) starts
#: the command again isolated (:func:`isolated_argv`).
CODE_ENV = ("PYTHONPATH", "PYTHONHOME", "PYTHONPLATLIBDIR", "PYTHONUSERBASE", "PYTHONPYCACHEPREFIX",
            "PYTHONSTARTUP", "PYTHONINSPECT", "PYTHONWARNINGS", "PYTHONBREAKPOINT", "PYTHONEXECUTABLE")


def isolated_argv(argv: list[str], flags, environ, executable: str | None) -> list[str] | None:
    """The command line that runs this command again in Python's isolated mode, when a :data:`CODE_ENV` variable
    is set and the interpreter does not already ignore them (``flags``: ``sys.flags``); else None. ``argv``:
    ``sys.argv`` (the console script's path first, or ``__main__.py``'s for ``python -m rfbench``)."""
    if flags.isolated or flags.ignore_environment or not executable or os.name != "posix":
        return None
    if not any(environ.get(name) for name in CODE_ENV):
        return None
    script = argv[0] if argv else ""
    if not script or os.path.basename(script) == "__main__.py" or not os.path.isfile(script):
        return [executable, "-I", "-m", "rfbench", *argv[1:]]
    return [executable, "-I", script, *argv[1:]]


def start_environ() -> dict:
    """The environment this process was started with (Linux: ``/proc/self/environ``, which code run at start-up
    cannot change by removing a variable from ``os.environ``: a ``sitecustomize.py`` that popped ``PYTHONPATH``
    kept the command from starting again isolated) together with ``os.environ``."""
    found: dict = {}
    try:
        with open("/proc/self/environ", "rb") as fh:
            for item in fh.read().split(b"\0"):
                name, sep, value = item.partition(b"=")
                if sep:
                    found[os.fsdecode(name)] = os.fsdecode(value)
    except OSError:
        pass
    return {**found, **os.environ}


#: The cyclic garbage collector's thresholds in a command (``gc.set_threshold``): a young collection every
#: 10,000 allocations of containers instead of Python's 700. A command holds its documents as many small objects
#: (the manifest of 43,350 BVP recordings, over a million), and at 700 the collector walked them all again and
#: again as they were built: in the parent of ``rfbench windows`` on that manifest's split, reading the manifest
#: took 0.50-0.63 s and planning both sides' rows 0.40 s, at 10,000 0.44 s and 0.15 s (no full collection left).
#: A value of nothing rfbench computes depends on when the collector runs.
GC_THRESHOLDS = (10_000, 10, 10)


def main() -> None:
    """Run the command line (:func:`rfbench.cli.main`), importing it here, inside the interrupt handling; started
    again isolated first when the environment names code for Python to run (:func:`isolated_argv`)."""
    import gc

    gc.set_threshold(*GC_THRESHOLDS)
    again = isolated_argv(sys.argv, sys.flags, start_environ(), sys.executable)
    if again is not None:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            os.execv(again[0], again)
        except OSError:  # cannot start again: go on here (verify still refuses what it can see)
            pass
    sys.path[:] = drop_current_folder(sys.path)
    try:
        from rfbench.cli import main as run

        run()
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        raise SystemExit(130) from None
