"""Split protocols and the leakage audit at scale, and Widar ingest throughput.

``AssignAudit``: a cross-subject assignment over generated Widar-like metadata (17 subjects, 3 rooms, 5 locations,
5 orientations; 2,550 packets per recording → exactly 50 windows of 100 packets, stride 50), the windows, and the
full audit of every window (recordings, overlapping windows, subject claim, shared domains). The goal is < 1 s
for 1M windows on the project machine and a constant ``track_ns_per_window`` across sizes (linear growth).

``AuditVsPython``: the same audit against a plain-Python version (dicts and sets per recording) measured in this
process, as a speed ratio.

``Ingest``: ``rfbench.datasets.widar.ingest`` over a generated tree of real bfee files (``ci``: ~260 small files;
``full``: ~260 files of 800–1,200 packets, ~55 MB, the size of real Widar receiver logs), with 1 and 2 worker
threads: files per second and the speed-up of 2 workers over 1. ``TwoThreadControl`` measures, in the same
run, what two threads can gain at all on the machine at that moment (a busy second core caps every speed-up).

``SweepKernel`` times the audit's Numba kernel alone (``KERNELS`` names it), as the audit calls it.

Sizes: the smallest of each (10,000 windows, the ``ci`` tree) are the CI-sized cases the regression gate
compares; the rest run only with ``RFBENCH_BENCH_LARGE=1`` (``make bench-large``).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import numpy as np

from .common import best_time, cached, call_recorded, record_kernel_calls

LARGE = os.environ.get("RFBENCH_BENCH_LARGE") == "1"  # CI sizes only unless set (benchmarks/README.md)
# The gate sets RFBENCH_BENCH_TIMER=cpu: time_* then count this process's CPU time, not the time it waited for a
# core that other work held (benchmarks/README.md).
timer = time.process_time if os.environ.get("RFBENCH_BENCH_TIMER") == "cpu" else time.perf_counter
_PACKETS = 2550
_WINDOW, _STRIDE = 100, 50  # (2550 - 100) // 50 + 1 = 50 windows per recording

#: The Numba kernel each benchmark below times alone (benchmarks/README.md, "One kernel, one benchmark").
KERNELS = {
    "rfbench.protocols._sweep.overlap_sweep": "SweepKernel.time_overlap_sweep",
}


def _imports():
    try:
        from rfbench.csi.windows import make_windows
        from rfbench.datasets.manifest import RecordingTable
        from rfbench.protocols.leakage import audit_rows
        from rfbench.protocols.split import assign
    except ImportError as exc:  # an older commit without split protocols
        raise NotImplementedError(str(exc)) from None
    return make_windows, RecordingTable, audit_rows, assign


def _table(n_windows: int):
    _, RecordingTable, _, _ = _imports()
    n_rec = n_windows // 50
    rng = np.random.default_rng(0)
    return RecordingTable.from_arrays(
        [f"r{k}" for k in range(n_rec)], np.full(n_rec, _PACKETS),
        subject=rng.integers(1, 18, n_rec), room=rng.integers(1, 4, n_rec),
        location=rng.integers(1, 6, n_rec), orientation=rng.integers(1, 6, n_rec))


class AssignAudit:
    params = [[10_000] + ([100_000, 1_000_000] if LARGE else [])]
    param_names = ["windows"]
    timeout = 120

    def setup(self, n):
        make_windows, _, audit_rows, assign = _imports()
        self.table = _table(n)
        self.make_windows, self.audit_rows, self.assign = make_windows, audit_rows, assign
        result = self.run()  # compiles the sweep kernel outside the timing
        assert result.passed and len(self.windows) == n

    def run(self):
        a = self.assign(self.table, "cross-subject", seed=0)[0]
        self.windows = w = self.make_windows(self.table, _WINDOW, _STRIDE)
        return self.audit_rows(self.table, w.recording, a.side[w.recording], w.start, w.stop, claims=a.claims)

    def time_assign_and_audit(self, n):
        self.run()

    def peakmem_assign_and_audit(self, n):
        self.run()

    def track_ns_per_window(self, n):
        return best_time(self.run) / n * 1e9

    track_ns_per_window.unit = "ns/window"


class SweepKernel:
    """The overlapping-windows sweep alone, as the audit of ``AssignAudit`` calls it (every window of a
    cross-subject split, a recording's windows on both sides in a tenth of the recordings)."""

    params = [[100_000] + ([1_000_000] if LARGE else [])]
    param_names = ["windows"]
    timeout = 120

    def setup(self, n):
        self.calls = cached(("sweep", n), lambda: self._record(n))

    @staticmethod
    def _record(n):
        make_windows, _, audit_rows, assign = _imports()
        table = _table(n)
        a = assign(table, "cross-subject", seed=0)[0]
        w = make_windows(table, _WINDOW, _STRIDE)
        side = a.side[w.recording].copy()
        leaky = (w.recording % 10 == 0) & (w.start % 100 == 0)  # both sides of one recording: the sweep's work
        side[leaky] = 1 - np.clip(side[leaky], 0, 1)
        import importlib.util

        # The kernel's module since it left leakage.py (so the audit imports Numba only when it sweeps).
        target = (("rfbench.protocols._sweep", "overlap_sweep") if importlib.util.find_spec("rfbench.protocols._sweep")
                  else ("rfbench.protocols.leakage", "_overlap_sweep"))
        return record_kernel_calls({"sweep": target}, lambda: audit_rows(table, w.recording, side, w.start, w.stop))

    def time_overlap_sweep(self, n):
        call_recorded(self.calls, "sweep")


def _python_audit(rec_ids, sides, starts, stops, subjects):
    """Dicts and sets: recordings per side, sorted windows per recording, subjects per side."""
    per_side = ({}, {})
    for r, s, a, b in zip(rec_ids, sides, starts, stops):
        if s in (0, 1):
            per_side[s].setdefault(r, []).append((a, b))
    both = set(per_side[0]) & set(per_side[1])
    overlap = set()
    for r in both:
        train = sorted(per_side[0][r])
        for a, b in per_side[1][r]:
            if any(x < b and a < y for x, y in train):
                overlap.add(r)
    shared = {subjects[r] for r in per_side[0]} & {subjects[r] for r in per_side[1]}
    return both, overlap, shared


class AuditVsPython:
    params = [[10_000] + ([100_000] if LARGE else [])]
    param_names = ["windows"]
    timeout = 120

    def setup(self, n):
        make_windows, _, audit_rows, assign = _imports()
        self.table = table = _table(n)
        a = assign(table, "cross-subject", seed=0)[0]
        w = make_windows(table, _WINDOW, _STRIDE)
        self.args = (w.recording, a.side[w.recording], w.start, w.stop)
        self.audit_rows, self.claims = audit_rows, a.claims
        self.py_args = tuple(x.tolist() for x in self.args) + (table.domains["subject"].codes.tolist(),)
        audit_rows(table, *self.args, claims=self.claims)

    def track_speedup_vs_python(self, n):
        py = best_time(lambda: _python_audit(*self.py_args))
        ours = best_time(lambda: self.audit_rows(self.table, *self.args, claims=self.claims))
        return py / ours

    track_speedup_vs_python.unit = "x"


_TREES = {"ci": dict(repetitions=1, records=(20, 40))}
if LARGE:
    _TREES["full"] = dict(repetitions=1, records=(800, 1200))


class Ingest:
    params = [list(_TREES), [1, 2]]
    param_names = ["tree", "workers"]
    timeout = 300

    def setup_cache(self):
        try:
            from rfbench.datasets.synthetic import make_widar_tree
        except ImportError:  # an older commit: setup() skips every benchmark of the class
            return {}  # not None: asv passes a None cache on as no argument at all
        roots = {}
        for name, kw in _TREES.items():
            root = Path("widar-" + name).resolve()
            shutil.rmtree(root, ignore_errors=True)
            make_widar_tree(root, seed=0, damage=False, **kw)
            roots[name] = str(root)
        return roots

    def setup(self, roots, tree, workers):
        if not roots:
            raise NotImplementedError("no synthetic Widar tree generator on this commit")
        from rfbench.datasets import widar

        self.widar, self.root = widar, roots[tree]
        manifest = widar.ingest(self.root, workers=workers)  # loads the parser's compiled kernels
        self.n_files = sum(len(r["files"]) for r in manifest.recordings)

    def time_ingest(self, roots, tree, workers):
        self.widar.ingest(self.root, workers=workers)

    def track_files_per_second(self, roots, tree, workers):
        return self.n_files / best_time(lambda: self.widar.ingest(self.root, workers=workers))

    track_files_per_second.unit = "files/s"

    def track_speedup_over_one_worker(self, roots, tree, workers):
        one = best_time(lambda: self.widar.ingest(self.root, workers=1))
        this = best_time(lambda: self.widar.ingest(self.root, workers=workers))
        return one / this

    track_speedup_over_one_worker.unit = "x"


class TwoThreadControl:
    """The speed-up two threads get on this machine right now for work that surely releases the GIL (NumPy's
    sort of independent arrays): the ceiling against which ``Ingest.track_speedup_over_one_worker`` is read.
    On a shared machine whose second core is busy this is ~1, and so is every parallel speed-up."""

    def setup(self):
        rng = np.random.default_rng(0)
        self.chunks = [rng.random(400_000) for _ in range(8)]

    def _run(self, workers):
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(np.sort, self.chunks))

    def track_two_thread_speedup(self):
        return best_time(lambda: self._run(1)) / best_time(lambda: self._run(2))

    track_two_thread_speedup.unit = "x"


if __name__ == "__main__":  # a quick look without asv: python -m benchmarks.bench_split
    for n in AssignAudit.params[0]:
        b = AssignAudit()
        b.setup(n)
        print(f"assign+audit {n:>9,} windows: {best_time(b.run):.3f} s ({b.track_ns_per_window(n):.0f} ns/window)")
    for n in AuditVsPython.params[0]:
        b = AuditVsPython()
        b.setup(n)
        print(f"audit speed-up vs Python at {n:,} windows: {b.track_speedup_vs_python(n):.1f}x")
    c = TwoThreadControl()
    c.setup()
    print(f"control: two threads of NumPy sorting run {c.track_two_thread_speedup():.2f}x faster than one")
    cwd = os.getcwd()
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        try:
            roots = Ingest().setup_cache()
            for tree in _TREES:
                for workers in (1, 2):
                    b = Ingest()
                    b.setup(roots, tree, workers)
                    rate = b.track_files_per_second(roots, tree, workers)
                    speedup = b.track_speedup_over_one_worker(roots, tree, workers)
                    print(f"ingest {tree} workers={workers}: {rate:.0f} files/s, "
                          f"speed-up over 1 worker {speedup:.2f}x")
        finally:
            os.chdir(cwd)
