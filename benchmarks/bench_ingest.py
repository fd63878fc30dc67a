"""``rfbench ingest files`` throughput on real corpora, what hashing costs, and the template matcher.

``IngestFiles``: ``rfbench.datasets.files.ingest`` over the two real public corpora of ``../shared/conformance``
(``gesture5x6``: 180 logs, 21 MB, 3×2 MIMO; ``wiar``: 320 logs, 18 MB, 3×1), with 1 and 2 worker threads:
files/s, MB/s, and the speed-up of 2 workers over 1 (read beside ``bench_split.TwoThreadControl``, which
measures what two threads can gain on the machine at that moment). The walk, the template matching and the
assembly are serial; only framing and hashing run on the workers. Skipped when the corpora are absent
(``RFBENCH_SHARED`` points at another ``shared`` folder).

``IngestFiles.track_hash_share``: the fraction of the whole ingest that hashing takes (the same ingest timed
with the counting read told not to hash). ``HashCost``: what sha256 adds to framing the same bytes:
``rfbench.io.intel5300.count_files`` with and without
``sha256=True`` on one thread, over a generated tree (always) and the real corpora (when present);
``track_hash_overhead`` is (count + hash) / count − 1.

``TemplateMatch``: the pure-Python matcher (``Template.match``) over generated WiAR-like paths, a tenth of
them not matching: paths per second (it is not a hot loop: a path costs microseconds, reading its file far more).

Run a quick look without asv: ``python -m benchmarks.bench_ingest``.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import numpy as np

from .common import best_time

LARGE = os.environ.get("RFBENCH_BENCH_LARGE") == "1"  # CI sizes only unless set (benchmarks/README.md)
timer = time.process_time if os.environ.get("RFBENCH_BENCH_TIMER") == "cpu" else time.perf_counter

_SHARED = Path(os.environ.get("RFBENCH_SHARED") or Path(__file__).resolve().parents[1].parent / "shared")
CORPORA = {
    "gesture5x6": (_SHARED / "conformance" / "gesture5x6", "{user}_{gesture}_{repetition}.dat",
                   {"subject": "user", "label": "gesture"}),
    "wiar": (_SHARED / "conformance" / "wiar" / "distance_factor_activity_data",
             "{distance}_alldata/csi_a{activity}_{sample}.dat", {"location": "distance", "label": "activity"}),
}


def _files_ingest():
    try:
        from rfbench.datasets.files import ingest
    except ImportError as exc:  # an older commit without ingest files
        raise NotImplementedError(str(exc)) from None
    return ingest


def _corpus(name: str):
    root, template, roles = CORPORA[name]
    if not root.is_dir():
        raise NotImplementedError(f"conformance corpus not available: {root}")
    return root, template, roles


class IngestFiles:
    params = [list(CORPORA), [1, 2]]
    param_names = ["corpus", "workers"]
    timeout = 300

    def setup(self, corpus, workers):
        ingest = _files_ingest()
        root, template, roles = _corpus(corpus)
        self.run = lambda w=workers: ingest(root, template, roles=roles, workers=w)
        manifest = self.run()  # loads the compiled kernels and warms the page cache
        self.n_files = sum(len(r["files"]) for r in manifest.recordings)
        self.n_bytes = sum(f["bytes"] for r in manifest.recordings for f in r["files"])

    def time_ingest(self, corpus, workers):
        self.run()

    def track_files_per_second(self, corpus, workers):
        return self.n_files / best_time(self.run)

    track_files_per_second.unit = "files/s"

    def track_mb_per_second(self, corpus, workers):
        return self.n_bytes / 1e6 / best_time(self.run)

    track_mb_per_second.unit = "MB/s"

    def track_files_per_cpu_second(self, corpus, workers):
        """Files per second of the process's CPU time (all threads): steady on a machine whose cores are busy with
        other work, where wall-clock rates are not."""
        best = float("inf")
        for _ in range(5):
            t0 = time.process_time()
            self.run()
            best = min(best, time.process_time() - t0)
        return self.n_files / best

    track_files_per_cpu_second.unit = "files/CPU-s"

    def track_speedup_over_one_worker(self, corpus, workers):
        return best_time(lambda: self.run(1)) / best_time(self.run)

    track_speedup_over_one_worker.unit = "x"

    def track_hash_share(self, corpus, workers):
        """The fraction of the whole ingest that hashing takes: the same ingest with the counting read told not to
        hash (``count_files(..., sha256=False)``) against the real one."""
        from rfbench.io import intel5300

        real = intel5300.count_files
        with_hash = best_time(self.run)
        intel5300.count_files = lambda paths, sha256=False: real(paths)
        try:
            without = best_time(self.run)
        finally:
            intel5300.count_files = real
        return 1.0 - without / with_hash

    track_hash_share.unit = "fraction"


_HASH_SOURCES = ["generated"] + list(CORPORA)


class HashCost:
    params = [_HASH_SOURCES]
    param_names = ["source"]
    timeout = 300

    def setup_cache(self):
        try:
            from rfbench.datasets.synthetic import make_widar_tree
        except ImportError:
            return {}  # not None: asv passes a None cache on as no argument at all
        root = Path("hash-tree").resolve()
        shutil.rmtree(root, ignore_errors=True)
        make_widar_tree(root, seed=0, damage=False, records=(40, 80))
        return {"generated": str(root)}

    def setup(self, cache, source):
        try:
            from rfbench.io.intel5300 import count_files
            count_files([], sha256=True)
        except (ImportError, TypeError) as exc:  # an older commit: no hashing in the counting read
            raise NotImplementedError(str(exc)) from None
        if source == "generated":
            if not cache:
                raise NotImplementedError("no synthetic tree generator on this commit")
            root = Path(cache["generated"])
        else:
            root = _corpus(source)[0]
        paths = sorted(str(p) for p in root.rglob("*.dat") if p.stat().st_size > 0)
        self.batches = [paths[i:i + 16] for i in range(0, len(paths), 16)]
        self.count_files = count_files
        self.both()  # compiled kernels loaded, files in the page cache

    def count(self):
        for batch in self.batches:
            self.count_files(batch)

    def both(self):
        for batch in self.batches:
            self.count_files(batch, sha256=True)

    def time_count_and_hash(self, cache, source):
        self.both()

    def track_hash_overhead(self, cache, source):
        return best_time(self.both, 5) / best_time(self.count, 5) - 1.0

    track_hash_overhead.unit = "fraction"


class TemplateMatch:
    params = [[5_000] + ([200_000] if LARGE else [])]
    param_names = ["paths"]

    def setup(self, n):
        try:
            from rfbench.datasets.template import compile_template
        except ImportError as exc:
            raise NotImplementedError(str(exc)) from None
        self.template = compile_template("{distance}_alldata/csi_a{activity}_{sample}.dat")
        rng = np.random.default_rng(0)
        d, a, s = rng.integers(1, 7, n), rng.integers(1, 17, n), rng.integers(1, 101, n)
        self.paths = [f"{x}_alldata/csi_a{y}_{z}.dat" if k % 10 else f"{x}_alldata/{y}_{z}_sample.txt"
                      for k, (x, y, z) in enumerate(zip(d, a, s))]
        self.match_all()

    def match_all(self):
        match = self.template.match
        for p in self.paths:
            match(p)

    def time_match(self, n):
        self.match_all()

    def track_paths_per_second(self, n):
        return n / best_time(self.match_all)

    track_paths_per_second.unit = "paths/s"


if __name__ == "__main__":  # a quick look without asv: python -m benchmarks.bench_ingest
    import tempfile

    for name in CORPORA:
        for workers in (1, 2):
            b = IngestFiles()
            try:
                b.setup(name, workers)
            except NotImplementedError as exc:
                print(f"ingest files {name}: skipped ({exc})")
                break
            print(f"ingest files {name} ({b.n_files} files, {b.n_bytes / 1e6:.1f} MB) workers={workers}: "
                  f"{b.track_files_per_second(name, workers):,.0f} files/s, "
                  f"{b.track_mb_per_second(name, workers):.0f} MB/s, "
                  f"speed-up over 1 worker {b.track_speedup_over_one_worker(name, workers):.2f}x, "
                  f"hashing {100 * b.track_hash_share(name, workers):.0f}% of the ingest")
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        try:
            cache = HashCost().setup_cache()
            for source in _HASH_SOURCES:
                h = HashCost()
                try:
                    h.setup(cache, source)
                except NotImplementedError as exc:
                    print(f"hash cost {source}: skipped ({exc})")
                    continue
                print(f"hash cost {source}: sha256 adds {100 * h.track_hash_overhead(cache, source):.0f}% to framing")
        finally:
            os.chdir(cwd)
    for n in TemplateMatch.params[0]:
        t = TemplateMatch()
        t.setup(n)
        print(f"template match: {t.track_paths_per_second(n):,.0f} paths/s ({n:,} paths)")
