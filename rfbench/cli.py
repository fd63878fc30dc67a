"""The ``rfbench`` command line: parse arguments, call the library, render the result.

This module stays thin and cheap to import: each command lives in ``rfbench.commands.<name>`` and imports
NumPy, Numba and its kernels inside the command function, so ``rfbench --help`` starts fast.
Nothing in the library imports this module.
"""

from __future__ import annotations

import importlib
from typing import Annotated, Optional

import typer

from rfbench import __version__

CONTEXT = {"help_option_names": ["-h", "--help"]}

app = typer.Typer(
    name="rfbench",
    help=(
        "Trustworthy WiFi-sensing results: exact Intel 5300 CSI parsing, leakage-audited splits, "
        "pose and gesture metrics under a declared spec, and evidence-tagged reports you can re-verify.\n\n"
        "Exit codes: 0 success, 1 a check failed (leak, proof FAIL, verify mismatch), "
        "2 bad input or usage, 3 proof SKIP."
    ),
    context_settings=CONTEXT,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)

# (module, attribute, kind): "command" registers a function, "group" a Typer sub-application.
# Each module imports only typer and the standard library at import time.
_COMMANDS: list[tuple[str, str, str]] = [
    # in pipeline order, which is the order of `rfbench --help`
    ("rfbench.commands.parse", "parse", "command"),
    ("rfbench.commands.ingest", "ingest", "group"),
    ("rfbench.commands.split", "split", "command"),
    ("rfbench.commands.audit", "audit", "command"),
    ("rfbench.commands.windows", "windows", "command"),
    ("rfbench.commands.predict", "predict", "command"),
    ("rfbench.commands.score", "score", "command"),
    ("rfbench.commands.verify", "verify", "command"),
    ("rfbench.commands.compare", "compare", "command"),
    ("rfbench.commands.proof", "proof", "command"),
    ("rfbench.commands.adapt", "adapt", "command"),
    ("rfbench.commands.config", "config", "group"),
    ("rfbench.commands.generate", "generate", "group"),
    ("rfbench.commands.demo", "demo", "command"),
]


def _register() -> None:
    for module_name, attr, kind in _COMMANDS:
        module = importlib.import_module(module_name)
        target = getattr(module, attr)
        name = getattr(module, "COMMAND_NAME", attr)
        if kind == "group":
            app.add_typer(target, name=name)
        else:
            app.command(name=name, context_settings=CONTEXT)(target)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"rfbench {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        Optional[bool],
        typer.Option("--version", callback=_version_callback, is_eager=True, help="Print the version and exit."),
    ] = None,
) -> None:
    """Trustworthy WiFi-sensing results."""


_register()


def main() -> None:
    """Console-script entry point."""
    app()
