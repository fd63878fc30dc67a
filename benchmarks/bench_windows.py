"""``rfbench windows`` as a whole job: one side of a split written from generated dataset trees, against the script
a user writes today, and its peak memory as the tree grows.

``MMFiWindows``: :func:`rfbench.datasets.windows.write_windows` on the train side of an MM-Fi-like tree
(:func:`rfbench.datasets.synthetic.make_mmfi_tree`; one-frame windows, amplitude and phase, pose targets): every
frame read, checked against the manifest, hashed, decoded and streamed into ``X.npy``. The peer
(:func:`mmfi_script`) is what a user writes today: ``scipy.io.loadmat`` per frame file (skipping empty ones, as
the MM-Fi toolbox does), NumPy stacking of the amplitude and phase, the pose row of each frame, ``numpy.save``.

``WidarWindows``: the same for a Widar-like tree of real bfee logs (:func:`make_widar_tree`; packet windows of 64
(16 on the CI tree, whose logs hold 20–40 packets) per receiver, amplitude of the raw CSI, gesture label indices).
The peer (:func:`widar_script`): csiread per
receiver file, ``numpy.abs``, windows stacked with NumPy, labels from the sorted gesture names, ``numpy.save``.

Sizes (``ci`` ones are what the regression gate compares): MM-Fi ``ci`` 4 recordings × 30 frames and ``ci4``
4× as many recordings (the ``peakmem_`` pair: flat peak memory as the tree grows), ``30k`` with
``RFBENCH_BENCH_LARGE=1``: 108 recordings × 297 frames = 32,076 frames, the train side 31,185 (35 of 36
subjects); Widar ``ci`` the 43-recording tree with 20–40 packets per log, ``2k`` with ``RFBENCH_BENCH_LARGE=1``:
8 repetitions, 2,064 logs of 800–1,200 packets, the train side (rooms 1 and 2) 1,488 of them.

``Kernels.time_int8_amplitude``: the raw-CSI amplitude kernel alone.

``track_speedup_vs_*`` are ratios of best-of-3 timings in this process (start-up excluded: the JIT is warmed and
every import done in ``setup``); the whole-process figures, start-up included, are in docs/windows.md.
``python -m benchmarks.bench_windows`` writes the trees and runs either job from the command line (for
whole-process timing).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from .common import best_time

LARGE = os.environ.get("RFBENCH_BENCH_LARGE") == "1"  # CI sizes only unless set (benchmarks/README.md)
# The gate sets RFBENCH_BENCH_TIMER=cpu: time_* then count this process's CPU time, not the time it waited for a
# core that other work held (benchmarks/README.md).
timer = time.process_time if os.environ.get("RFBENCH_BENCH_TIMER") == "cpu" else time.perf_counter

_SUBJECTS = tuple(f"S{k:02d}" for k in range(1, 41))
MMFI_TREES = {
    "ci": dict(subjects=_SUBJECTS[:4], actions=("A01",), frames=30),
    "ci4": dict(subjects=_SUBJECTS[:4], actions=("A01", "A02", "A03", "A04"), frames=30),
}
WIDAR_TREES = {"ci": dict(repetitions=1, records=(20, 40))}
#: Packet-window length per Widar tree: the default (64) where the logs are long enough, 16 on the CI tree's short
#: logs (20–40 packets).
WIDAR_LENGTH = {"ci": 16, "2k": 64}
if LARGE:
    MMFI_TREES["30k"] = dict(subjects=_SUBJECTS[:36], actions=("A01", "A02", "A03"), frames=297)
    WIDAR_TREES["2k"] = dict(repetitions=8, records=(800, 1200))


def make_mmfi_case(folder: Path, name: str) -> Path:
    """An MM-Fi-like tree, its manifest and a cross-subject split holding out the last subject; returns the
    split's path."""
    from rfbench.datasets import mmfi
    from rfbench.datasets.synthetic import make_mmfi_tree

    kw = MMFI_TREES[name]
    make_mmfi_tree(folder / "tree", seed=0, damage=False, force=True, **kw)
    mmfi.ingest(folder / "tree").write(folder / "manifest.json", force=True)
    return _split(folder, "cross-subject", test=[kw["subjects"][-1]])


def make_widar_case(folder: Path, name: str) -> Path:
    """A Widar-like tree, its manifest and a cross-room split holding out room 3; returns the split's path."""
    from rfbench.datasets import widar
    from rfbench.datasets.synthetic import make_widar_tree

    make_widar_tree(folder / "tree", seed=0, damage=False, force=True, **WIDAR_TREES[name])
    widar.ingest(folder / "tree").write(folder / "manifest.json", force=True)
    return _split(folder, "cross-room", test=["3"])


def _split(folder: Path, protocol: str, **kw) -> Path:
    from rfbench.io.files import sha256_file, write_json
    from rfbench.protocols.split import make_splits

    digest, _ = sha256_file(folder / "manifest.json")
    (outcome,) = make_splits(folder / "manifest.json", protocol, manifest_ref={"path": "manifest.json",
                                                                             "sha256": digest}, **kw)
    write_json(folder / "split.json", outcome.document, force=True)
    return folder / "split.json"


def _side(split_path: Path, side: str):
    split = json.loads(Path(split_path).read_text())
    manifest_path = Path(split_path).parent / split["manifest"]["path"]
    manifest = json.loads(manifest_path.read_text())
    root = manifest_path.parent / manifest["root"]  # an absolute root stays as it is
    ids = set(split[side])
    return [r for r in manifest["recordings"] if r["id"] in ids], root


def mmfi_script(split_path, side: str, out) -> None:
    """The script a user writes today for MM-Fi poses: scipy.io.loadmat per frame, NumPy stacking, numpy.save."""
    import glob

    import scipy.io

    recordings, root = _side(split_path, side)
    xs, ys = [], []
    for rec in recordings:
        folder = root / rec["id"]
        gt = np.load(folder / "ground_truth.npy")
        for path in sorted(glob.glob(str(folder / "wifi-csi" / "frame*.mat"))):
            if os.path.getsize(path) == 0:  # the toolbox skips empty frames
                continue
            mat = scipy.io.loadmat(path)
            xs.append(np.stack([mat["CSIamp"], mat["CSIphase"]]))
            ys.append(gt[int(os.path.basename(path)[5:-4]) - 1])
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    np.save(out / "X.npy", np.stack(xs)[:, None].astype(np.float32))
    np.save(out / "y.npy", np.stack(ys))


def widar_script(split_path, side: str, out, length: int = 64) -> None:
    """The script a user writes today for Widar3.0 gestures: csiread per receiver file, numpy.abs, windows
    stacked with NumPy, label indices into the sorted gesture names, numpy.save."""
    import csiread

    recordings, root = _side(split_path, side)
    names = sorted({r["gesture"] for r in recordings if r.get("gesture")})
    xs, ys = [], []
    for rec in recordings:
        if not rec.get("gesture"):
            continue
        for f in sorted(rec["files"], key=lambda f: f["receiver"]):
            if f["bytes"] == 0:
                continue
            reader = csiread.Intel(str(root / f["path"]), nrxnum=3, ntxnum=1, if_report=False)
            reader.read()
            amp = np.abs(reader.csi)
            for start in range(0, amp.shape[0] - length + 1, length):
                xs.append(amp[start:start + length])
                ys.append(names.index(rec["gesture"]))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    np.save(out / "X.npy", np.stack(xs)[:, :, None].astype(np.float32))
    np.save(out / "y.npy", np.array(ys, dtype=np.int64))


def _imports():
    try:
        from rfbench.datasets.windows import WindowSettings, write_windows
    except ImportError as exc:  # an older commit without rfbench windows
        raise NotImplementedError(str(exc)) from None
    return WindowSettings, write_windows


_WARM: set = set()


class _Job:
    trees: dict = {}
    make = None
    timeout = 900

    def _make_cases(self):
        try:
            _imports()
        except NotImplementedError:
            return {}  # not None: asv passes a None cache on as no argument at all
        cases = {}
        for name in self.trees:
            folder = Path(f"{type(self).__name__.lower()}-{name}").resolve()
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            cases[name] = str(type(self).make(folder, name))
        return cases

    def setup(self, cases, tree):
        if not cases:
            raise NotImplementedError("rfbench windows is missing on this commit")
        WindowSettings, self.write_windows = _imports()
        self.settings = self.settings_for(WindowSettings, tree)
        self.tree = tree
        self.split = cases[tree]
        self.tmp = tempfile.TemporaryDirectory()
        self.out = Path(self.tmp.name) / "out"
        if (type(self).__name__, tree) not in _WARM:  # once per process: imports done, the JIT's cache loaded
            self.run()
            _WARM.add((type(self).__name__, tree))

    def teardown(self, cases, tree):
        self.tmp.cleanup()

    def run(self):
        self.write_windows(self.split, "train", self.out, self.settings, force=True)

    def time_windows(self, cases, tree):
        self.run()

    def peakmem_windows(self, cases, tree):
        self.run()


class MMFiWindows(_Job):
    trees = MMFI_TREES
    make = staticmethod(make_mmfi_case)
    params = [list(MMFI_TREES)]
    param_names = ["tree"]

    def setup_cache(self):  # each class its own (asv keys a cache by the source line of its setup_cache)
        return self._make_cases()

    def settings_for(self, WindowSettings, tree):
        return WindowSettings()

    def track_scipy_script_seconds(self, cases, tree):
        return best_time(lambda: mmfi_script(self.split, "train", self.out.parent / "peer"))

    track_scipy_script_seconds.unit = "s"

    def track_speedup_vs_scipy_script(self, cases, tree):
        peer = best_time(lambda: mmfi_script(self.split, "train", self.out.parent / "peer"))
        return peer / best_time(self.run)

    track_speedup_vs_scipy_script.unit = "x"


class WidarWindows(_Job):
    trees = WIDAR_TREES
    make = staticmethod(make_widar_case)
    params = [list(WIDAR_TREES)]
    param_names = ["tree"]

    def setup_cache(self):
        return self._make_cases()

    def settings_for(self, WindowSettings, tree):
        return WindowSettings(length=WIDAR_LENGTH[tree])

    def setup(self, cases, tree):
        try:
            import csiread  # noqa: F401
        except ImportError:
            self.csiread = False
        else:
            self.csiread = True
        super().setup(cases, tree)

    def track_csiread_script_seconds(self, cases, tree):
        if not self.csiread:
            raise NotImplementedError("csiread is not installed")
        return best_time(self._peer)

    def _peer(self):
        widar_script(self.split, "train", self.out.parent / "peer", WIDAR_LENGTH[self.tree])

    track_csiread_script_seconds.unit = "s"

    def track_speedup_vs_csiread_script(self, cases, tree):
        if not self.csiread:
            raise NotImplementedError("csiread is not installed")
        return best_time(self._peer) / best_time(self.run)

    track_speedup_vs_csiread_script.unit = "x"


#: The kernels this suite times alone (tests/test_habits.py checks every kernel has one).
KERNELS = {"rfbench.datasets.windows.features._int8_amplitude": "Kernels.time_int8_amplitude"}


class Kernels:
    """The raw-CSI amplitude kernel alone (one receiver log of ``packets`` records of 30 × 3 × 1 int8 pairs)."""

    params = [[1000] + ([100_000] if LARGE else [])]
    param_names = ["packets"]

    def setup(self, packets):
        try:
            from rfbench.datasets.windows.features import int8_amplitude
        except ImportError as exc:
            raise NotImplementedError(str(exc)) from None
        rng = np.random.default_rng(0)
        self.pairs = rng.integers(-128, 128, size=(packets, 30, 3, 1, 2), dtype=np.int8)
        self.out = np.empty((packets, 30, 3, 1), dtype=np.float32)
        self.int8_amplitude = int8_amplitude
        int8_amplitude(self.pairs, self.out)  # compiled (or loaded from the cache) outside the timing

    def time_int8_amplitude(self, packets):
        self.int8_amplitude(self.pairs, self.out)


def main(argv=None) -> int:
    """``python -m benchmarks.bench_windows make mmfi|widar TREE FOLDER`` writes a case (tree, manifest, split);
    ``... peer mmfi|widar SPLIT OUT [LENGTH]`` runs the user's script on the split's train side (LENGTH: the Widar
    packet window, default 64)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) == 4 and args[0] == "make":
        make = make_mmfi_case if args[1] == "mmfi" else make_widar_case
        folder = Path(args[3])
        folder.mkdir(parents=True, exist_ok=True)
        print(make(folder, args[2]))
        return 0
    if len(args) in (4, 5) and args[0] == "peer":
        if args[1] == "mmfi":
            mmfi_script(args[2], "train", args[3])
        else:
            widar_script(args[2], "train", args[3], int(args[4]) if len(args) == 5 else 64)
        return 0
    print(main.__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
