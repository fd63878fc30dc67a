"""The one place rfbench sets Numba options.

Every kernel is compiled through :func:`njit` (or :func:`njit_parallel` for ``prange`` drivers):

- ``cache=True`` so a second process does not pay compilation again;
- ``error_model="numpy"`` so a division by zero gives inf/NaN like NumPy instead of raising;
- no ``fastmath``: results must be reproducible bit for bit (the training proof hashes weights, and
  reductions must keep their written order), so reassociation is never allowed.

Kernels must also run under ``NUMBA_DISABLE_JIT=1`` (then these decorators return plain Python functions).

Numba's settings come from the environment only: a ``.numba_config.yaml`` in the current folder (which Numba
otherwise reads whenever PyYAML is installed, at import and before every compilation) is ignored. Such a file
in a folder someone else handed over could point Numba's cache, whose index files are pickles loaded at a
kernel's first call, at code of theirs: run from that folder, ``rfbench proof`` printed PASS for weights it
never trained. (The environment's ``NUMBA_CACHE_DIR`` is the caller's own; ``rfbench verify`` removes it.)
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings


def _import_numba():
    """``import numba`` with its per-folder settings file never read: PyYAML is hidden from Numba's config
    module while it loads (it then reads no file), and the file name it checks before each compilation is one
    that is never a regular file."""
    loaded = sys.modules.get("numba")
    if loaded is not None:  # imported before rfbench, by the program that imports rfbench: its own choice
        return loaded
    missing = object()
    kept = sys.modules.get("yaml", missing)
    sys.modules["yaml"] = None  # type: ignore[assignment]  # `import yaml` raises ImportError
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="A Numba config file is found")
            import numba
            import numba.core.config as config
    except ValueError as exc:  # a NUMBA_* variable numba refuses (NUMBA_NUM_THREADS=0): the caller's, not an input's
        from rfbench.errors import ValidationError

        names = ", ".join(sorted(k for k in os.environ if k.startswith("NUMBA_"))) or "none set"
        raise ValidationError(f"numba refused the settings of this environment ({exc}); check the NUMBA_* "
                              f"variables ({names})") from None
    finally:
        if kept is missing:
            del sys.modules["yaml"]
        else:
            sys.modules["yaml"] = kept
    config._HAVE_YAML = False
    config._config_fname = os.devnull  # exists, never a regular file: skipped on every reload
    return numba


numba = _import_numba()

__all__ = ["njit", "njit_parallel", "prange", "set_threads", "serial_below", "PARALLEL_MIN_WORK"]

_OPTIONS = {"cache": True, "error_model": "numpy", "nogil": True}

prange = numba.prange


def njit(*args, **overrides):
    """``numba.njit`` with rfbench's options; use bare (``@njit``) or with extra options (``@njit(inline=...)``)."""
    return numba.njit(*args, **{**_OPTIONS, **overrides})


def njit_parallel(*args, **overrides):
    """Like :func:`njit` with ``parallel=True``; for ``prange`` drivers whose threads write disjoint slices."""
    return njit(*args, parallel=True, **overrides)


def set_threads(n: int | None) -> int:
    """Set Numba's thread count (clamped to 1..available); ``None`` leaves it. Returns the count in use."""
    if n is not None:
        numba.set_num_threads(max(1, min(int(n), numba.config.NUMBA_NUM_THREADS)))
    return numba.get_num_threads()


#: Below this much work (e.g. joints scored) a parallel kernel runs on one thread: waking the thread pool
#: costs more than it saves, and far more on a machine whose other cores are busy.
PARALLEL_MIN_WORK = 1 << 20


@contextlib.contextmanager
def serial_below(work: int, threshold: int | None = None):
    """Run the enclosed ``njit_parallel`` kernels on one thread when ``work`` is below ``threshold``
    (default :data:`PARALLEL_MIN_WORK`).

    Only for kernels whose result does not depend on the thread count (each thread owns whole segments).
    """
    if work >= (PARALLEL_MIN_WORK if threshold is None else threshold):
        yield
        return
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(before)
