"""Model inputs for one side of a split, read straight from the dataset files its manifest names.

The one function to know is :func:`build_windows` (arrays and index in memory); :func:`write_windows` writes the
same to a folder (``X.npy`` float32, streamed; ``y.npy``; ``index.json``, ``rfbench.windows/1``), which is what
``rfbench windows SPLIT --side train|test -o DIR`` runs. :class:`WindowSettings` holds every option.

- **MM-Fi**: every ``frameNNN.mat`` is a 10-packet snapshot belonging to ground-truth row NNN − 1 (frames are
  matched to rows by number). A row is a window of ``length`` consecutive frames (default 1, stride 1); X has
  axes (window, frame, feature, antenna, subcarrier, packet) = (N, L, F, 3, 114, 10); for pose, y is the ground
  truth of the window's ``target`` frame (default last) in the ground truth's own dtype. Windows holding an
  empty (0-byte) frame are dropped and counted; recordings whose ground truth does not have one row per frame
  are excluded and listed; non-finite CSI is refused unless ``nonfinite="toolbox-fill"``.
- **Intel 5300 corpora** (Widar3.0, or any manifest whose recordings' files are receiver logs): packet windows
  per receiver (receivers have different packet counts and are not time-aligned), or one row per recording
  with every receiver resampled to ``resample`` packets; amplitude of the raw CSI by default.
- **Labels** (task gesture): y indexes one label set, the sorted names of the whole manifest (or a names.txt),
  the same for both sides; an integer-looking label is a name.

:func:`load_index` reads and validates an index, :func:`check_index_files` re-checks the dataset files it was
read from, :func:`test_truth` / :func:`train_targets` give a side's targets from the dataset for scoring, and
:class:`WindowSequence` serves ``(x, y)`` samples to a training loop (torch's DataLoader accepts it).
"""

from rfbench.datasets.windows.settings import WindowSettings, setting_fields

# Everything else is imported on first use, so that the command line can read the settings at start-up without
# importing NumPy.
_LAZY = {
    "Windows": "api", "build_windows": "api", "write_windows": "api", "SideTargets": "api", "side_targets": "api",
    "test_truth": "api", "train_targets": "api", "WindowSequence": "sequence", "WindowIndex": "index",
    "load_index": "index", "validate_index": "index", "check_index_files": "index", "toolbox_fill": "build",
}

__all__ = ["WindowSettings", "setting_fields", *_LAZY]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
