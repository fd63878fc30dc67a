"""onnxruntime as ``rfbench predict`` runs it: the optional dependency, the CPU's instruction-set tier, the
session and run settings (applied in the child process :mod:`rfbench.nn.sandbox` starts), and the runtime
part of a prediction record.

onnxruntime's CPU kernels (MLAS) pick their code path from the CPU's instruction set at run time, so
:func:`cpu_isa` records the tier a run used; :func:`_session_options` fixes the thread settings (1 intra-op
thread by default, sequential execution, no spinning) that a record names and a re-run reproduces.
"""

from __future__ import annotations

import platform
import sys

from rfbench.errors import MissingDependencyError
from rfbench.nn.onnx_file import ModelFile
from rfbench.nn.predict_settings import PredictSettings

INSTALL_HINT = "pip install 'rfbench[onnx]'"
_PROVIDERS = ["CPUExecutionProvider"]


# --- the CPU, as onnxruntime's kernels see it ------------------------------------------------------------

# x86-64 micro-architecture levels (the x86-64 psABI), as Linux /proc/cpuinfo names the flags.
_X86_LEVELS = (
    ("x86-64-v2", ("cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3")),
    ("x86-64-v3", ("avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave")),
    ("x86-64-v4", ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")),
)
# The features onnxruntime's MLAS dispatch tests (onnxruntime/core/mlas/lib/platform.cpp): its float kernels
# go SSE2 → AVX → AVX2+FMA3 → AVX-512F → AVX-512 core (BW/DQ/VL); 8-bit integer kernels also use VNNI and AMX.
_MLAS_FLAGS = ("sse4_1", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512dq", "avx512vl",
               "avx_vnni", "avx512_vnni", "avx_vnni_int8", "avx_ne_convert", "amx_tile", "amx_int8", "amx_bf16")


def _mlas_tier(flags: set) -> str:
    """The float-kernel tier MLAS dispatches to, from the same tests it makes (on the OS-enabled flags)."""
    if {"avx512f", "avx2", "fma"} <= flags:
        return "avx512core" if {"avx512bw", "avx512dq", "avx512vl"} <= flags else "avx512f"
    if {"avx2", "fma"} <= flags:
        return "avx2-fma3"
    if "avx" in flags:
        return "avx"
    return "sse2"


def cpu_isa(cpuinfo: str | None = None, machine: str | None = None) -> dict:
    """The CPU's instruction-set level as recorded in ``pred.json``.

    Read from Linux's ``/proc/cpuinfo`` ``flags`` line, which lists only the features the kernel has enabled
    (AVX-512 is absent when the OS does not save its registers): the x86-64 psABI level (``x86-64-v1`` …
    ``x86-64-v4``), the float-kernel tier onnxruntime's MLAS picks from the same features (``sse2``,
    ``avx``, ``avx2-fma3``, ``avx512f``, ``avx512core``), and the MLAS-relevant flags present. Two runs
    reproduce bit for bit only on equal ``level``, ``mlas`` and ``flags``.

    Parameters
    ----------
    cpuinfo : str, optional
        The text of ``/proc/cpuinfo`` (read when not given). Unreadable (another OS): level ``"unknown"``.
    machine : str, optional
        ``platform.machine()`` unless given.
    """
    machine = machine or platform.machine()
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
                cpuinfo = fh.read(1 << 20)
        except OSError:
            cpuinfo = ""
    flags = set()
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("flags", "Features"):
            flags = set(value.split())
            break
    out = {"machine": machine, "source": "/proc/cpuinfo flags", "level": "unknown", "mlas": "unknown", "flags": []}
    if not flags:
        return out
    if machine.lower() in ("x86_64", "amd64"):
        level = "x86-64-v1"
        for name, needed in _X86_LEVELS:
            if not set(needed) <= flags:
                break
            level = name
        out.update(level=level, mlas=_mlas_tier(flags), flags=sorted(flags & set(_MLAS_FLAGS)))
    else:
        out.update(level=machine, mlas=machine, flags=sorted(flags))
    return out


def _onnxruntime():
    try:
        import onnxruntime
    except ImportError:
        raise MissingDependencyError(f"running an ONNX model needs onnxruntime, which is not installed: "
                                     f"{INSTALL_HINT}") from None
    return onnxruntime


def onnxruntime_version() -> str:
    """The installed onnxruntime's version (:class:`MissingDependencyError` when it is not installed)."""
    return _onnxruntime().__version__


def _first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:400] + ("…" if len(text) > 400 else "")


def _session_options(ort, intra_op_threads: int):
    so = ort.SessionOptions()
    so.intra_op_num_threads = intra_op_threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 4  # fatal only: onnxruntime's own log lines would go straight to stderr; its errors
    # reach the caller as exceptions, turned into one line each
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.add_session_config_entry("session.inter_op.allow_spinning", "0")
    so.add_session_config_entry("session.load_model_format", "ONNX")
    return so


def _make_session(box, model: ModelFile, settings: PredictSettings):
    """One onnxruntime session over the model's bytes (never its path: what runs is what was hashed), in a child
    process of ``box`` (:class:`rfbench.nn.sandbox.Sandbox`) with the run's limits."""
    return box.session(model)


def _check_onnxruntime() -> None:
    """The install hint when onnxruntime is missing; the parent does not import it (the children do)."""
    import importlib.util

    try:
        missing = sys.modules.get("onnxruntime", ...) is None or importlib.util.find_spec("onnxruntime") is None
    except (ImportError, ValueError):
        missing = True
    if missing:
        raise MissingDependencyError(f"running an ONNX model needs onnxruntime, which is not installed: "
                                     f"{INSTALL_HINT}")


def _runtime_record(version: str, settings: PredictSettings) -> dict:
    return {"name": "onnxruntime", "version": version, "providers": list(_PROVIDERS),
            "graph_optimization": "ORT_ENABLE_ALL", "execution_mode": "ORT_SEQUENTIAL",
            "intra_op_threads": settings.intra_op_threads, "inter_op_threads": 1, "sessions": settings.sessions,
            "spinning": False}
