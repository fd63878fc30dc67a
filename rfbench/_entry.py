"""The ``rfbench`` console script and ``python -m rfbench``: Ctrl-C while the command line is still loading (the
first few tenths of a second, before any command installs its own handling) ends the process with one line
and exit 130, as it does later, never with a traceback from inside an import."""

from __future__ import annotations

import sys


def main() -> None:
    """Run the command line (:func:`rfbench.cli.main`), importing it here, inside the interrupt handling."""
    try:
        from rfbench.cli import main as run

        run()
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        raise SystemExit(130) from None
