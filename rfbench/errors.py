"""Domain errors raised by the library and turned into exit codes by the CLI.

Every error carries ``exit_code`` (DESIGN.md §1): 2 for bad input or usage, 1 for a failed check
(a leak, a proof failure, a verification mismatch). The CLI prints ``str(error)`` as one line on stderr
and exits with that code; library code never prints.
"""

from __future__ import annotations

__all__ = [
    "RfbenchError",
    "FormatError",
    "ValidationError",
    "ConfigError",
    "OutputExistsError",
    "OutputError",
    "MissingDependencyError",
    "SchemaError",
    "CheckFailed",
    "LeakageError",
    "VerificationError",
    "for_cli",
    "malformed_as_format_error",
]

import re as _re
from contextlib import contextmanager as _contextmanager

_PARAM = _re.compile(r"`([a-z][a-z0-9_]*)`")

#: How rfbench words a write the file size limit refused (EFBIG), wherever it is met; verify knows a re-run's
#: error by these words (the verifier's limit, not a difference in the report).
FILE_TOO_LARGE = "file too large: past the file size limit of this process (`ulimit -f`)"


def for_cli(message: str, flags=None) -> str:
    """A library message as the command line shows it: each parameter named in backticks (`` `split` ``)
    becomes its option (``--split``), from ``flags`` (parameter → option; a settings field's declared flag
    wins) or, by default, ``--`` + the name with dashes. Library messages name parameters, never flags."""
    flags = flags or {}
    return _PARAM.sub(lambda m: flags.get(m.group(1)) or "--" + m.group(1).replace("_", "-"), str(message))


class RfbenchError(Exception):
    """Base class of every error rfbench raises on purpose. Bad input by default (exit 2)."""

    exit_code = 2


class FormatError(RfbenchError):
    """An input file is not in the expected format (not a bfee log, unreadable JSON, wrong npz keys...)."""


class ValidationError(RfbenchError, ValueError):
    """An argument or array has the wrong shape, dtype, range or content (NaN in ground truth, ...)."""


class ConfigError(ValidationError):
    """A configuration value is unknown or outside its allowed range; the message names the key."""


class OutputExistsError(RfbenchError):
    """An output file already exists and overwriting was not requested (``--force``)."""


class OutputError(RfbenchError, OSError):
    """An output cannot be written (a read-only folder, no space left, a file where a folder should be); the
    message names the output the user asked for. Also an ``OSError``, which callers caught before."""


class MissingDependencyError(RfbenchError):
    """An optional extra (``rfbench[plot]``, ``rfbench[mat]``) is needed but not installed."""


class SchemaError(FormatError):
    """A JSON file between stages has no ``schema`` key, the wrong kind, or an unknown major version."""


class CheckFailed(RfbenchError):
    """A check ran and failed (exit 1): the input was fine, the result is negative."""

    exit_code = 1


class LeakageError(CheckFailed):
    """A split puts the same subject, room, location, orientation, recording or window on both sides.

    ``checks`` holds the failed audit checks (``{"name", "passed", "detail"}`` dicts) when available.
    """

    def __init__(self, message: str, checks: list | None = None):
        super().__init__(message)
        self.checks = list(checks or [])


class VerificationError(CheckFailed):
    """``rfbench verify`` re-ran a report and a number or an input hash differs."""

    def __init__(self, message: str, differences: list | None = None):
        super().__init__(message)
        self.differences = list(differences or [])
        #: the dataset trees the chain was being checked against, when verify had named them (as on a match)
        self.datasets: list[dict] = []


#: What Python raises when a document's field has another type or shape than the code reading it expects
MALFORMED = (TypeError, AttributeError, KeyError, IndexError, ValueError)


@_contextmanager
def malformed_as_format_error(what: str, limit: int = 160):
    """Inside it, a document malformed in a way no check names (a field of another type, a missing key) is one
    line, exit 2: :data:`MALFORMED` becomes ``FormatError("WHAT (TypeError: ...)")``, the error's text folded
    to one line of at most ``limit`` characters. rfbench's own errors (a ``ValidationError`` is also a
    ``ValueError``) pass unchanged."""
    try:
        yield
    except MALFORMED as exc:
        if isinstance(exc, RfbenchError):
            raise
        raise FormatError(f"{what} ({type(exc).__name__}: {' '.join(str(exc).split())[:limit]})") from None
