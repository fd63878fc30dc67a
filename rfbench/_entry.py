"""The ``rfbench`` console script and ``python -m rfbench``: Ctrl-C while the command line is still loading (the
first few tenths of a second, before any command installs its own handling) ends the process with one line
and exit 130, as it does later, never with a traceback from inside an import.

Before anything else is imported, the current folder leaves Python's import path: an empty or relative entry
(an empty ``PYTHONPATH`` entry, as ``export PYTHONPATH=$PYTHONPATH:/opt/lib`` leaves when the variable was
unset, means the current folder) or the current folder itself. rfbench and its libraries are imported from where
they are installed, never from the folder a command runs in: run from a report folder someone handed over with
such a ``PYTHONPATH``, a ``typer.py`` beside the report ran inside ``rfbench verify`` and printed a MATCH.
(``python -I -m rfbench`` keeps the current folder off the path from the start.)"""

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


def main() -> None:
    """Run the command line (:func:`rfbench.cli.main`), importing it here, inside the interrupt handling."""
    sys.path[:] = drop_current_folder(sys.path)
    try:
        from rfbench.cli import main as run

        run()
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        raise SystemExit(130) from None
