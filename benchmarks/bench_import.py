"""Cold start: ``rfbench --help`` in a fresh interpreter (must stay well under a second)."""


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
