"""rfbench: trustworthy WiFi-sensing results.

Exact Intel 5300 CSI parsing, leakage-audited dataset splits, pose and gesture metrics under a declared
MetricSpec beside a training-split baseline, and evidence-tagged reports that ``rfbench verify`` re-runs.

The pipeline as a library, one function per stage (each also a command, ``rfbench <stage>``)::

    log = rfbench.read_log("capture.dat")                       # parse
    manifest = rfbench.ingest_widar("Widar3.0")                  # ingest (also ingest_mmfi)
    (split,) = rfbench.make_splits(manifest, "cross-room", test=[3])   # split, with its audit
    rfbench.audit_split("split.json")                            # audit
    run = rfbench.score_pose("pred.npy", "gt.npy", split="split.json", ...,
                             settings=rfbench.PoseSettings(skeleton="h36m17", units="m"), out="report.json")
    rfbench.verify_report("report.json")                         # verify
    rfbench.predict("model.onnx", "windows/")                    # predict

Names are imported on first use (``rfbench.__getattr__``): ``import rfbench`` itself loads neither NumPy nor
Numba, so the command line starts fast. :data:`__all__` lists every public name.
"""

from __future__ import annotations

import sys


def _no_bytecode_under_a_file_size_limit() -> None:
    """Write no ``.pyc`` while a file size limit (``ulimit -f``) holds: CPython writes each with one write whose
    count it does not check, so a limit met there leaves a cut file in ``__pycache__``, on which every later
    import of that module fails (``EOFError: marshal data too short``: rfbench ended "aborted" until the file was
    removed) — a verify under such a limit, whose re-runs import what the verifier had not, did it."""
    try:
        import resource

        if resource.getrlimit(resource.RLIMIT_FSIZE)[0] != resource.RLIM_INFINITY:
            sys.dont_write_bytecode = True
    except (ImportError, OSError, ValueError):  # not POSIX: no such limit
        pass


_no_bytecode_under_a_file_size_limit()

if sys.argv[:1] == ["-m"]:  # (set so only while ``python -m`` imports the package its module is in)
    from rfbench._entry import drop_current_folder, ran_as_module

    if ran_as_module(sys.orig_argv if hasattr(sys, "orig_argv") else []):
        # ``python -m rfbench``: the current folder, first on the import path, leaves it before anything else is
        # imported (a json.py beside a report ran inside verify when rfbench._rerun imported json)
        sys.path[:] = drop_current_folder(sys.path)

import importlib  # noqa: E402

__version__ = "0.1.0"

#: Public name → (module, attribute). Reading it imports nothing heavy.
_EXPORTS: dict[str, tuple[str, str]] = {
    # parse
    "read_log": ("rfbench.io.intel5300", "read"),
    # ingest
    "ingest_widar": ("rfbench.datasets.widar", "ingest"),
    "ingest_mmfi": ("rfbench.datasets.mmfi", "ingest"),
    "ingest_files": ("rfbench.datasets.files", "ingest"),
    "read_manifest": ("rfbench.datasets.manifest", "read_manifest"),
    "Manifest": ("rfbench.datasets.manifest", "Manifest"),
    # split and audit
    "make_splits": ("rfbench.protocols.split", "make_splits"),
    "write_splits": ("rfbench.protocols.split", "write_splits"),
    "ProtocolSplitter": ("rfbench.protocols.split", "ProtocolSplitter"),
    "load_split": ("rfbench.protocols.splitfile", "load_split"),
    "audit_split": ("rfbench.protocols.audit", "audit_split"),
    # score
    "score_pose": ("rfbench.report.score", "score_pose"),
    "score_gesture": ("rfbench.report.score", "score_gesture"),
    "ScoreInputs": ("rfbench.report.settings", "ScoreInputs"),
    "PoseSettings": ("rfbench.report.settings", "PoseSettings"),
    "GestureSettings": ("rfbench.report.settings", "GestureSettings"),
    "BootstrapSettings": ("rfbench.report.settings", "BootstrapSettings"),
    "ReportOptions": ("rfbench.report.settings", "ReportOptions"),
    # verify
    "verify_report": ("rfbench.report.verify", "verify_report"),
    "VerifyLimits": ("rfbench.report.verify", "Limits"),
    # predict
    "predict": ("rfbench.nn.predict", "predict"),
    "PredictSettings": ("rfbench.nn.predict_settings", "PredictSettings"),
    # robustness
    "RobustnessSettings": ("rfbench.report.robustness_settings", "RobustnessSettings"),
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    try:
        module, attr = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'rfbench' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
