"""The ``rfbench`` command line: parse arguments, call the library, render the result.

This module stays thin and cheap to import: each command lives in ``rfbench.commands.<name>`` and imports
NumPy, Numba and its kernels inside the command function, so ``rfbench --help`` starts fast.
Nothing in the library imports this module.
"""

from __future__ import annotations

import importlib
import sys
from typing import Annotated, Any, Optional

import typer
from typer.core import TyperGroup

from rfbench import __version__

CONTEXT = {"help_option_names": ["-h", "--help"]}


class _Group(TyperGroup):
    """The root command: every usage error of every command, present and future, is reported here in two lines.

    Click/Typer would print the usage line, a hint and the message in a box (5-6 lines). Instead the parse runs
    in non-standalone mode and a usage error becomes ``error: <message>`` and ``Try 'rfbench CMD -h' for
    help.`` on stderr, exit 2 (:func:`rfbench.commands._usage.usage_error`).
    """

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode: bool = True, **extra: Any):
        if not standalone_mode:
            return super().main(args=args, prog_name=prog_name, complete_var=complete_var,
                                standalone_mode=False, **extra)
        from rfbench.commands._usage import click_error_exit

        _tolerant_streams()
        try:
            code = super().main(args=args, prog_name=prog_name, complete_var=complete_var,
                                standalone_mode=False, **extra)
        except Exception as exc:  # only Click's own errors are handled here; anything else propagates
            code = click_error_exit(exc, self._command_path(sys.argv[1:] if args is None else list(args),
                                                           prog_name or "rfbench"))
            if code is None:
                raise
        sys.exit(code if isinstance(code, int) else 0)

    def _command_path(self, args: list, prog_name: str) -> str:
        """``rfbench ingest widar`` for ``args`` that name that command (for the help hint of an error raised
        before Click knew the command's context)."""
        path, command = [prog_name], self
        for token in args:
            if str(token).startswith("-"):
                continue
            sub = getattr(command, "commands", {}).get(token)
            if sub is None:
                break
            path.append(str(token))
            command = sub
        return " ".join(path)


#: Error handlers that write any character (as itself or as an escape); any other (``strict``, or
#: ``surrogateescape``, which writes a lone surrogate but raises on a character the encoding lacks) is replaced.
_WRITES_ANY = ("backslashreplace", "replace", "xmlcharrefreplace", "namereplace")


def _tolerant_streams() -> None:
    """Let stdout/stderr print any file name: a name that is not valid UTF-8 (held as lone surrogates), or one
    the stream's encoding lacks (``PYTHONIOENCODING=ascii:surrogateescape`` and a folder named in UTF-8), is
    shown escaped instead of raising UnicodeEncodeError (a traceback, and verify's MATCH exit 1). A stream that
    is closed (``>&-``: Python has none) writes to the null device, so that a command's exit code stays its own."""
    import os

    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115 - lives as long as the process
    for stream in (sys.stdout, sys.stderr):
        if getattr(stream, "errors", None) not in _WRITES_ANY and hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a stream that cannot change its handler keeps it
                pass


def _settle_streams() -> None:
    """Flush stdout and stderr as a command ends; one that cannot take what is left (a reader gone, a full disk)
    is pointed at the null device (:func:`rfbench._process.stream_to_null`), so the interpreter's own last flush
    cannot fail and turn the command's exit code (verify's verdict) into 120."""
    from rfbench._process import stream_to_null

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            stream_to_null(stream)


def _new_app() -> typer.Typer:
    """The root command with no sub-command yet: :func:`_register` adds them."""
    root = typer.Typer(
        name="rfbench",
        cls=_Group,
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
    root.callback()(_root)
    return root


# (module, name, kind): "command" registers the module's function of that name, "group" its Typer
# sub-application of that name. Each module imports only typer and the standard library at import time.
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
    ("rfbench.commands.robustness", "robustness", "command"),
    ("rfbench.commands.compare", "compare", "command"),
    ("rfbench.commands.proof", "proof", "command"),
    ("rfbench.commands.adapt", "adapt", "command"),
    ("rfbench.commands.config", "config", "group"),
    ("rfbench.commands.generate", "generate", "group"),
    ("rfbench.commands.demo", "demo", "command"),
]
_NAMES = frozenset(name for _, name, _ in _COMMANDS)


def _register(root: typer.Typer, only: str | None = None) -> typer.Typer:
    """Add every command to ``root`` (or only the one named ``only``); returns ``root``."""
    for module_name, name, kind in _COMMANDS:
        if only is not None and name != only:
            continue
        target = getattr(importlib.import_module(module_name), name)
        if kind == "group":
            root.add_typer(target, name=name)
        else:
            root.command(name=name, context_settings=CONTEXT)(target)
    return root


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"rfbench {__version__}")
        raise typer.Exit(0)


def _root(
    version: Annotated[
        Optional[bool],
        typer.Option("--version", callback=_version_callback, is_eager=True, help="Print the version and exit."),
    ] = None,
) -> None:
    """Trustworthy WiFi-sensing results."""


def _whole_app() -> typer.Typer:
    """The whole command line, every command registered: built on first use, then kept as ``app``."""
    if "app" not in globals():
        globals()["app"] = _register(_new_app())
    return globals()["app"]


def __getattr__(name: str) -> Any:
    """``rfbench.cli.app``: :func:`_whole_app`."""
    if name == "app":
        return _whole_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def app_for(argv: list[str]) -> typer.Typer:
    """The command line that runs ``argv``: when its first word names a command, a root holding that command
    alone, so only that command's module is imported and only its options are built — the start-up of every
    command; otherwise (the root's help, ``--version``, a name to correct) the whole ``app``."""
    if argv and argv[0] in _NAMES:
        return _register(_new_app(), only=argv[0])
    return _whole_app()


#: The variable with which Click answers shell completion instead of running the command: completion is off
#: (``add_completion=False``), but Click still read it, and ``rfbench verify`` set so printed "Shell ... not
#: supported" and exited 1, the code of a mismatch, having verified nothing.
_COMPLETE_VAR = "_RFBENCH_COMPLETE"


def main() -> None:
    """Console-script entry point (also ``python -m rfbench``, which names itself ``rfbench`` in usage and hints)."""
    import os

    os.environ.pop(_COMPLETE_VAR, None)
    try:
        app_for(sys.argv[1:])(prog_name="rfbench")
    except OSError as exc:
        if not _stdout_failed(exc):
            raise
        raise SystemExit(2) from None
    finally:
        _settle_streams()


#: What a write to a stream that cannot take it raises (a full disk, a quota, a file grown past its limit, a device
#: error): the errors a command's printing meets, never rfbench's own files (those are one line inside the command).
_STREAM_ERRNOS = ("ENOSPC", "EDQUOT", "EFBIG", "EIO")


def _stdout_failed(exc: OSError) -> bool:
    """When a command's printing to stdout failed (``>/dev/full``): say so in one stderr line and return True, so
    the command ends with exit 2, not a traceback and exit 1 (the code of a failed check: a report whose summary
    could not be printed read as a forged one). ``verify`` settles its verdict's printing itself (its exit code
    stays the verdict). Another OSError that reached here: False (it is raised as it is)."""
    import errno

    codes = {getattr(errno, name) for name in _STREAM_ERRNOS if hasattr(errno, name)}
    if exc.errno not in codes or exc.filename is not None:
        return False
    from rfbench._process import stream_to_null

    stream_to_null(sys.stdout)  # what is still buffered can no longer fail the last flush
    try:
        sys.stderr.write(f"error: standard output could not be written ({(exc.strerror or str(exc)).lower()}): "
                         "what the command printed is incomplete\n")
        sys.stderr.flush()
    except OSError:
        pass
    return True
