"""Widar3.0 BVP end to end, as whole processes, against the script a user writes today.

The job: a generated BVP tree (``rfbench generate widar --kind bvp``) to model inputs. rfbench's way is three
commands, each its own process as a user runs them (start-up included): ``rfbench ingest widar TREE`` (every file
read, parsed and hashed), ``rfbench split MANIFEST -p cross-subject --test user4 --gestures common6`` (assigned
and audited), and ``rfbench windows SPLIT --side both`` (every file re-read, checked against the manifest's
size and sha256, padded into X, for the train and the test side; until 2026-12-05 one ``windows`` per side, four
processes). The script a user writes instead (:data:`SCRIPT`): ``os.walk``,
``scipy.io.loadmat`` per file, ``numpy.pad`` to the longest T, ``numpy.save`` of X and y, in one process — no
hash, no check, no split.

``track_speedup_vs_script``: the median over :data:`PAIRS` A/B pairs of the script's wall-clock time over
rfbench's three processes; ``track_cpu_speedup_vs_script`` the same of CPU seconds (steadier on a busy
machine). ``track_rfbench_seconds`` / ``track_script_seconds``: the medians themselves.
``track_windows_peak_mb`` / ``track_script_peak_mb``: peak resident memory of ``rfbench windows`` (both sides)
and of the script (``ru_maxrss`` of the child), which shows the windows job's memory staying bounded (chunks of
16 MiB of X) while the script holds every profile and X at once.

Cases (built in ``setup_cache``, never committed): ``bvp4000`` — 13 repetitions of the generator's plan, 3,978
files, T 2–38 (as the release's); with ``RFBENCH_BENCH_LARGE=1``, ``bvp43k`` — 51 repetitions at the release's 5 × 5
torso locations and face orientations, 43,350 files, the release's size, every one a recording.

Outside asv: ``python -m benchmarks.bench_bvp make CASE DIR`` builds a case's tree in DIR/tree,
``python -m benchmarks.bench_bvp time TREE DIR [PAIRS]`` runs A/B pairs on it (outputs under DIR) and
``python -m benchmarks.bench_bvp script > bvp_job.py`` writes the script, run as ``python bvp_job.py TREE OUT``.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LARGE = os.environ.get("RFBENCH_BENCH_LARGE") == "1"  # CI sizes only unless set (benchmarks/README.md)
#: case: (repetitions of the generator's plan, its locations and orientations per gesture): 34 x positions**2
#: files a repetition. (Until 2026-12-04 bvp43k was 143 repetitions at 3 x 3: 43,758 files, of which the
#: 13,468 with a repetition past 99 are names ingest leaves out — rfbench read 30,290 recordings, the script all.)
ALL_CASES = {"bvp4000": (13, 3), "bvp43k": (51, 5)}
CASES = {k: v for k, v in ALL_CASES.items() if k == "bvp4000" or LARGE}
FRAMES = (2, 38)
PAIRS = 3

#: The script a user writes today: os.walk + scipy.io.loadmat per file + numpy padding + numpy.save.
SCRIPT = r"""
import os, re, sys
import numpy as np
import scipy.io

src, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
xs, ys = [], []
for folder, _, files in os.walk(src):
    for name in sorted(files):
        m = re.match(r"user\d+-(\d+)-\d+-\d+-\d+-.+-L\d+\.mat$", name)
        if m is None:
            continue
        v = scipy.io.loadmat(os.path.join(folder, name))["velocity_spectrum_ro"]
        if v.ndim == 2:
            v = v[:, :, None]
        if v.shape[2] == 0:
            continue
        xs.append(np.moveaxis(v, 2, 0).astype(np.float32))
        ys.append(int(m.group(1)) - 1)
t_max = max(x.shape[0] for x in xs)
X = np.stack([np.pad(x, ((0, t_max - x.shape[0]), (0, 0), (0, 0))) for x in xs])
np.save(os.path.join(out, "X.npy"), X)
np.save(os.path.join(out, "y.npy"), np.array(ys))
"""


def make_case(case: str, folder: Path) -> Path:
    """Build ``case``'s tree in ``folder/tree`` and return it."""
    from rfbench.datasets.synthetic_bvp import make_widar_bvp_tree

    tree = folder / "tree"
    repetitions, positions = ALL_CASES[case]
    wider = {"positions": positions} if positions != 3 else {}  # (3: also on commits before the keyword)
    make_widar_bvp_tree(tree, repetitions=repetitions, frames=FRAMES, damage=False, **wider)
    return tree


def _child(argv: list[str]) -> tuple[float, float, float]:
    """Wall-clock seconds, peak resident MB and CPU seconds (user + system) of one fresh interpreter running
    ``argv``."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *argv], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[:3]} exited {proc.returncode}")
    return seconds, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def warm(tree: str) -> None:
    """Read every file of ``tree`` once, untimed, so that a job starts with the tree in the page cache. Each job
    (rfbench's chain, the script) is timed from a warm cache: this machine's kernel reclaims page cache left
    idle for a while, so whichever job ran first after a pause read the 2.7 GB tree from disk (an ingest of 7.25 s
    instead of 3.6), a difference of the machine's day, not of the two jobs."""
    for folder, _, names in os.walk(tree):
        for name in names:
            with open(os.path.join(folder, name), "rb", buffering=0) as fh:
                while fh.read(1 << 20):
                    pass


def rfbench_job(tree: str, out: str) -> dict[str, tuple[float, float, float]]:
    """The three rfbench commands, each a process: ``{step: (seconds, peak MB, CPU seconds)}`` (the tree read
    first, untimed: :func:`warm`)."""
    warm(tree)
    m, s = os.path.join(out, "manifest.json"), os.path.join(out, "split.json")
    steps = {
        "ingest": ["-m", "rfbench", "ingest", "widar", tree, "-o", m, "--json"],
        "split": ["-m", "rfbench", "split", m, "-p", "cross-subject", "--test", "user4", "--gestures", "common6",
                  "-o", s, "--json"],
        "windows": ["-m", "rfbench", "windows", s, "--side", "both", "-o", out, "--json"],
    }
    return {name: _child(argv) for name, argv in steps.items()}


def script_job(tree: str, out: str) -> tuple[float, float, float]:
    """The script, a process: ``(seconds, peak MB, CPU seconds)`` (the tree read first, untimed: :func:`warm`)."""
    warm(tree)
    return _child(["-c", SCRIPT, tree, os.path.join(out, "script")])


class BvpJob:
    params = [list(CASES)]
    param_names = ["case"]
    timeout = 3600

    def setup_cache(self):
        try:
            import rfbench.datasets.synthetic_bvp  # noqa: F401
        except ImportError:  # an older commit: setup() skips every benchmark of the class
            return {}  # not None: asv passes a None cache on as no argument at all
        root = Path("bvp-job").resolve()
        shutil.rmtree(root, ignore_errors=True)
        trees = {case: str(make_case(case, root / case)) for case in CASES}
        scratch = root / "scratch"
        scratch.mkdir()
        rfbench_job(trees["bvp4000"], tempfile.mkdtemp(dir=scratch))  # kernels compiled and cached first
        return {"trees": trees, "scratch": str(scratch)}

    def setup(self, cache, case):
        if not cache:
            raise NotImplementedError("no BVP generator (rfbench.datasets.synthetic_bvp) on this commit")
        try:
            import scipy.io  # noqa: F401
        except ImportError:
            raise NotImplementedError("scipy is not installed (the script's reader)") from None
        self.tree, self.scratch = cache["trees"][case], cache["scratch"]
        self.out = tempfile.mkdtemp(dir=self.scratch)

    def teardown(self, cache, case):
        if getattr(self, "out", None):
            shutil.rmtree(self.out, ignore_errors=True)

    def _pairs(self):
        ours, theirs = [], []
        for _ in range(PAIRS):
            out = tempfile.mkdtemp(dir=self.out)
            ours.append(rfbench_job(self.tree, out))
            theirs.append(script_job(self.tree, out))
            shutil.rmtree(out, ignore_errors=True)
        return ours, theirs

    def track_speedup_vs_script(self, cache, case):
        """Median over A/B pairs of the script's wall-clock time over rfbench's three processes."""
        ours, theirs = self._pairs()
        return statistics.median(t[0] / sum(v[0] for v in o.values()) for o, t in zip(ours, theirs))

    track_speedup_vs_script.unit = "x script"

    def track_cpu_speedup_vs_script(self, cache, case):
        """The same ratio of CPU seconds (user + system of each child): steadier than wall-clock time on a
        machine whose cores are busy with other work."""
        ours, theirs = self._pairs()
        return statistics.median(t[2] / sum(v[2] for v in o.values()) for o, t in zip(ours, theirs))

    track_cpu_speedup_vs_script.unit = "x script (CPU)"

    def track_rfbench_seconds(self, cache, case):
        ours, _ = self._pairs()
        return statistics.median(sum(v[0] for v in o.values()) for o in ours)

    track_rfbench_seconds.unit = "s"

    def track_script_seconds(self, cache, case):
        _, theirs = self._pairs()
        return statistics.median(t[0] for t in theirs)

    track_script_seconds.unit = "s"

    def track_cpu_over_floor(self, cache, case):
        """rfbench's CPU seconds (its three processes, one run) over those of the work the chain cannot leave out
        (:func:`evidence_floor` of the same tree, timed in this process): how far the chain is from its floor.
        Steadier than the ratios against the script, most of whose time is the kernel's (faulting in the memory
        it holds), which changes from day to day on a virtual machine."""
        out = tempfile.mkdtemp(dir=self.out)
        ours = rfbench_job(self.tree, out)
        return sum(v[2] for v in ours.values()) / evidence_floor(self.tree)["floor_cpu_s"]

    track_cpu_over_floor.unit = "x floor (CPU)"

    def track_windows_peak_mb(self, cache, case):
        ours, _ = self._pairs()
        return max(o["windows"][1] for o in ours)

    track_windows_peak_mb.unit = "MB"

    def track_script_peak_mb(self, cache, case):
        _, theirs = self._pairs()
        return max(t[1] for t in theirs)

    track_script_peak_mb.unit = "MB"


def _print_pair(ours: dict, theirs: tuple) -> tuple[float, float]:
    for name, (s, mb, cpu) in ours.items():
        print(f"rfbench {name:14s} {s:7.2f} s  {cpu:6.2f} CPU-s  {mb:6.0f} MB")
    wall, cpu = sum(v[0] for v in ours.values()), sum(v[2] for v in ours.values())
    print(f"rfbench total          {wall:7.2f} s  {cpu:6.2f} CPU-s")
    print(f"script                 {theirs[0]:7.2f} s  {theirs[2]:6.2f} CPU-s  {theirs[1]:6.0f} MB")
    print(f"speed-up               {theirs[0] / wall:7.2f} x    {theirs[2] / cpu:6.2f} x (CPU)", flush=True)
    return theirs[0] / wall, theirs[2] / cpu


def pairs_on_tree(tree: str, folder: str, pairs: int) -> None:
    """``pairs`` A/B pairs (rfbench's three processes, then the script) on an existing tree, each pair's figures
    and the medians of the ratios."""
    ratios = []
    for _ in range(pairs):
        out = tempfile.mkdtemp(dir=folder)
        ours = rfbench_job(tree, out)
        theirs = script_job(tree, out)
        shutil.rmtree(out, ignore_errors=True)
        ratios.append(_print_pair(ours, theirs))
    print(f"median of {pairs} pair(s)   {statistics.median(r[0] for r in ratios):7.2f} x    "
          f"{statistics.median(r[1] for r in ratios):6.2f} x (CPU)")


def evidence_floor(tree: str) -> dict:
    """The CPU seconds of the work the chain cannot leave out, each piece timed alone in this process on one core
    with no rfbench code around it: every file read and hashed (sha256) twice (``ingest`` records the digests,
    ``windows`` checks them), every compressed profile inflated once (ISA-L, as rfbench), every profile cast to
    float32 into its zero-padded row once, and the sha256 of X (every row at the longest T). What a whole job
    costs beyond ``floor_cpu_s`` is rfbench's own: interpreters, the manifest written once and read three times,
    the split's assignment and audit, the walk, per-file Python, and whatever of the cores stays idle. (A tree of
    files as the generator writes them: one real double matrix each, its values last.)"""
    import hashlib

    import numpy as np
    from isal import isal_zlib

    from rfbench.datasets.bvp_mat import bvp_frames

    paths = sorted(os.path.join(d, f) for d, _, fs in os.walk(tree) for f in fs if f.endswith(".mat"))
    clock = time.process_time
    t0 = clock()
    for p in paths:
        with open(p, "rb") as fh:
            hashlib.sha256(fh.read()).digest()
    read_hash = clock() - t0
    blobs = []
    for p in paths:
        with open(p, "rb") as fh:
            blobs.append(fh.read())
    frames = [bvp_frames(b, p) for p, b in zip(paths, blobs)]
    compressed = [b[128] == 15 for b in blobs]  # one miCOMPRESSED element after the 128-byte header
    t0 = clock()
    for b, c in zip(blobs, compressed):
        if c:
            isal_zlib.decompress(b[136:])  # (each freed at once, as in a job, not kept: no fresh pages to fault in)
    inflate = clock() - t0
    inner = [isal_zlib.decompress(b[136:]) if c else b for b, c in zip(blobs, compressed)]
    del blobs
    t_max = max(frames)
    row = np.zeros((t_max, 20, 20), np.float32)
    values = [np.frombuffer(b, "<f8", count=400 * t, offset=len(b) - 3200 * t) for b, t in zip(inner, frames)]
    t0 = clock()
    for v, t in zip(values, frames):  # MATLAB's v(i, j, t) is x[t, i, j]
        np.copyto(row[:t].transpose(0, 2, 1), v.reshape(t, 20, 20), casting="same_kind")
        row[t:] = 0
    cast = clock() - t0
    x_bytes = len(paths) * t_max * 1600
    block = np.zeros(16 << 20, np.uint8)
    h = hashlib.sha256()
    t0 = clock()
    for _ in range(x_bytes // block.nbytes):
        h.update(block)
    h.update(block[:x_bytes % block.nbytes])
    x_hash = clock() - t0
    floor = 2 * read_hash + inflate + cast + x_hash
    return {"files": len(paths), "compressed": sum(compressed), "t_max": t_max, "x_bytes": x_bytes,
            "read_sha256_s": read_hash, "inflate_s": inflate, "cast_s": cast, "x_sha256_s": x_hash,
            "floor_cpu_s": floor, "cores": os.cpu_count() or 1, "floor_wall_s": floor / (os.cpu_count() or 1)}


def main(argv: list[str]) -> int:
    """``make CASE DIR``: build a case's tree; ``script``: print the user's script; ``run CASE DIR``: build it
    and print one A/B pair's figures; ``time TREE DIR [PAIRS]``: A/B pairs on a tree already built (outputs in
    DIR); ``floor TREE``: :func:`evidence_floor` of a tree."""
    if len(argv) == 3 and argv[0] in ("make", "run"):
        tree = make_case(argv[1], Path(argv[2]))
        print(tree)
        if argv[0] == "run":
            out = tempfile.mkdtemp(dir=argv[2])
            _print_pair(rfbench_job(str(tree), out), script_job(str(tree), out))
        return 0
    if len(argv) in (3, 4) and argv[0] == "time" and (len(argv) == 3 or argv[3].isdigit()):
        pairs_on_tree(argv[1], argv[2], int(argv[3]) if len(argv) == 4 else PAIRS)
        return 0
    if argv == ["script"]:
        sys.stdout.write(SCRIPT.lstrip())
        return 0
    if len(argv) == 2 and argv[0] == "floor":
        import json

        print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in evidence_floor(argv[1]).items()},
                         indent=2))
        return 0
    print("usage: python -m benchmarks.bench_bvp make|run CASE DIR | time TREE DIR [PAIRS] | floor TREE | script",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
