"""Cold start: ``rfbench --help`` in a fresh interpreter (must stay well under a second)."""


def setup():
    """Skip (rather than fail) on a commit that has no ``rfbench.cli``."""
    import importlib.util

    try:
        found = importlib.util.find_spec("rfbench.cli") is not None
    except ImportError:  # no rfbench package at all
        found = False
    if not found:
        raise NotImplementedError("rfbench.cli is not available at this commit")


def timeraw_help():
    return """
import contextlib, io
from rfbench.cli import app
with contextlib.redirect_stdout(io.StringIO()):
    try:
        app(["--help"])
    except SystemExit:
        pass
"""


def timeraw_import_cli():
    return "import rfbench.cli"
