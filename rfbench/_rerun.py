"""Limits a re-run applies to itself when ``rfbench verify`` starts it (stdlib only, run before anything else).

``rfbench verify`` starts ``python -I -m rfbench`` with ``RFBENCH_RERUN_LIMITS`` set to
``{"cpu_seconds", "memory_mb", "parent"}``. Before the command line is even parsed, the child caps its own CPU
time (``RLIMIT_CPU``) and address space (``RLIMIT_AS``) and, on Linux, asks the kernel to kill it if verify
dies (``PR_SET_PDEATHSIG``), so a killed verify never leaves its re-run behind. The variable only ever
tightens limits; a malformed value stops the child with exit 2.

A re-run never loads SciPy's linear algebra (:data:`BLOCKED`): rfbench uses none of it, but Numba's CPU target
imports it when it starts, if SciPy is installed, to learn whether BLAS is there (a runtime install of rfbench has
no SciPy, and ``rfbench parse`` and ``windows`` hide it for that moment: :func:`rfbench._process.load_kernels`).
Its import loads SciPy's own OpenBLAS, which starts its threads and maps a 32 MiB buffer for each at once, and
retries a failed mapping for ever: under a ``--memory-mb`` of 400-550 MiB the re-run hung there (a core busy)
until verify's ``--timeout`` ended it, and the verdict blamed the time, not the memory.
"""

from __future__ import annotations

import json
import os
import signal
import sys

ENV = "RFBENCH_RERUN_LIMITS"
#: The modules a re-run cannot import (an import of one raises ImportError).
BLOCKED = ("scipy.linalg",)
_PR_SET_PDEATHSIG = 1


def apply_rerun_limits() -> None:
    """Apply the limits of ``RFBENCH_RERUN_LIMITS`` to this process, if the variable is set."""
    raw = os.environ.get(ENV)
    if raw is None:
        return
    try:
        spec = json.loads(raw)
        cpu = int(spec["cpu_seconds"])
        memory = int(spec["memory_mb"]) << 20
        parent = int(spec["parent"])
    except (ValueError, KeyError, TypeError):
        sys.stderr.write(f"error: {ENV} is malformed; it is set by rfbench verify only\n")
        raise SystemExit(2) from None
    try:
        import resource

        for limit, value in ((resource.RLIMIT_CPU, cpu), (resource.RLIMIT_AS, memory)):
            soft, hard = resource.getrlimit(limit)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(limit, (value, hard))
    except (ImportError, ValueError, OSError):  # pragma: no cover - not POSIX
        pass
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover
            pass
    if os.getppid() != parent:  # verify died before the request took effect
        raise SystemExit(1)
    for name in BLOCKED:
        sys.modules[name] = None
