"""Content-leakage fingerprinting (``rfbench audit --content``): the XXH64 kernels, and whole fingerprint passes
on the demo trees and on the real corpora.

``Kernels``: the span-hash kernel over 212-byte spans (the body of a 3×1 bfee record) and the bfee kernel (zero
check + hash) over a generated log laid out like ``sample_0x5_64_3000.dat``, each alone as the library runs
them (one thread below ``PARALLEL_MIN_BYTES``); ``track_gb_per_s``, and ``track_parallel_speedup``: every thread
against one, same data, same process.

``DemoTrees``: :func:`rfbench.protocols.content.fingerprint` over the generated trees of ``rfbench demo``'s
generators (``rfbench.datasets.synthetic``, ``synthetic_bvp``): a Widar-like tree of bfee logs, an MM-Fi-like
tree of ``.mat`` frames and a Widar3.0 BVP tree (306 files at CI size; each file's ``velocity_spectrum_ro``
values are its one frame unit), with the sha256 of every file recorded in the manifest (as ingest records it) or
not (then the pass computes it); ``track_mb_per_s``, and ``track_fraction_of_ingest``: the pass's time over the
time of the ingest that made the manifest (``widar.ingest``; ``mmfi.ingest(verify_frames=True)``, which opens
every frame; ``ingest_bvp``).

``RealCorpora``: the same pass over ``../shared/conformance/wiar`` (320 WiAR logs, 17 MB) and
``../shared/conformance/gesture5x6`` (180 logs, 21 MB) with hand-built manifests (:func:`conformance_manifest`;
``track_*`` only, skipped cleanly when the corpora are absent): MB/s, and the fraction of the time the ingest's
counting pass (the parser's framing of every file, :func:`rfbench.io.intel5300.count_files`) takes.

Sizes: CI sizes by default; ``RFBENCH_BENCH_LARGE=1`` adds 16 and 64 MiB kernel cases and larger trees.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import time
from pathlib import Path

import numpy as np

from .common import best_time

LARGE = os.environ.get("RFBENCH_BENCH_LARGE") == "1"  # CI sizes only unless set (benchmarks/README.md)
timer = time.process_time if os.environ.get("RFBENCH_BENCH_TIMER") == "cpu" else time.perf_counter

# ../shared/conformance beside the checkout (RFBENCH_CONFORMANCE names another copy, e.g. from a worktree)
CONFORMANCE = Path(os.environ.get("RFBENCH_CONFORMANCE")
                   or Path(__file__).resolve().parents[1].parent / "shared" / "conformance")


def _content():
    try:
        from rfbench.protocols import content
    except ImportError as exc:  # an older commit without the content check
        raise NotImplementedError(str(exc)) from None
    return content


def _fingerprints():
    """The module holding the XXH64 and bfee kernels: rfbench.protocols.fingerprints, or on older commits
    rfbench.protocols.content itself (where they lived before it was split)."""
    try:
        from rfbench.protocols import fingerprints
    except ImportError:
        return _content()
    return fingerprints


# ------------------------------------------------------------------------------------------------------------
# Hand-built manifests of the two real corpora (one recording per log; no generic ingest)
# ------------------------------------------------------------------------------------------------------------

_WIAR = re.compile(r"^csi_a(\d+)_(\d+)\.dat$")
_GESTURE = re.compile(r"^([a-z]+)_(\d+)_(\d+)\.dat$")


def conformance_manifest(name: str, root: Path | None = None, with_sha256: bool = True) -> dict:
    """A manifest document for ``wiar`` or ``gesture5x6`` listing every log, built by hand from the corpora's
    READMEs: WiAR ``{distance}_alldata/csi_a{activity}_{sample}.dat`` → ``location`` = distance (m),
    ``gesture`` = activity, ``repetition`` = sample (the README's "volunteer" wording is ambiguous, so no
    subject); gesture5x6 ``{user}_{gesture}_{repetition}.dat`` → ``subject``, ``gesture``, ``repetition``.
    ``frames`` are the valid records the parser's framing counts; ``sha256`` as ingest records it."""
    from rfbench.datasets.manifest import Manifest
    from rfbench.io.intel5300 import count_records

    if name == "wiar":
        root = root or CONFORMANCE / "wiar" / "distance_factor_activity_data"
        paths = sorted(root.glob("*_alldata/csi_a*_*.dat"))
    elif name == "gesture5x6":
        root = root or CONFORMANCE / "gesture5x6"
        paths = sorted(root.glob("*_*_*.dat"))
    else:
        raise ValueError(f"unknown corpus {name!r}")
    recordings = []
    for p in paths:
        entry = {"path": p.relative_to(root).as_posix(), "bytes": p.stat().st_size}
        if with_sha256:
            entry["sha256"] = hashlib.sha256(p.read_bytes()).hexdigest()
        rec = {"id": p.relative_to(root).with_suffix("").as_posix(), "files": [entry],
               "frames": count_records(p).n_records}
        if name == "wiar":
            activity, sample = map(int, _WIAR.match(p.name).groups())
            rec.update(location=int(p.parent.name.split("_")[0]), gesture=str(activity), repetition=sample)
        else:
            user, gesture, repetition = _GESTURE.match(p.name).groups()
            rec.update(subject=user, gesture=gesture, repetition=int(repetition))
        recordings.append(rec)
    return Manifest(name, str(root), recordings).to_dict()


def _with_sha256(doc: dict, root: Path) -> dict:
    for rec in doc["recordings"]:
        for f in rec["files"]:
            f["sha256"] = hashlib.sha256((root / f["path"]).read_bytes()).hexdigest()
    return doc


# ------------------------------------------------------------------------------------------------------------
# Kernels alone
# ------------------------------------------------------------------------------------------------------------

_KERNEL_SIZES = [1 << 20] + ([16 << 20, 64 << 20] if LARGE else [])
_SPANS: dict = {}


def _spans(n_bytes: int):
    if n_bytes not in _SPANS:
        rng = np.random.default_rng(0)
        buf = rng.integers(0, 256, n_bytes, dtype=np.uint8)
        n = n_bytes // 212
        _SPANS[n_bytes] = (buf, np.arange(n, dtype=np.int64) * 212, np.full(n, 212, dtype=np.int64))
    return _SPANS[n_bytes]


_LOGS: dict = {}


def _log(n_bytes: int):
    if n_bytes not in _LOGS:
        from rfbench.io.writer import sample_0x5_like

        one = sample_0x5_like(seed=0)  # 1.04 MB, 2,998 records
        _LOGS[n_bytes] = np.frombuffer(one * max(1, n_bytes // len(one)), dtype=np.uint8)
    return _LOGS[n_bytes]


#: The kernels this suite times alone (tests/test_habits.py checks every kernel has one).
KERNELS = {"rfbench.protocols.fingerprints._hash_spans": "Kernels.time_hash_spans",
           "rfbench.protocols.fingerprints._fingerprint_bfee": "Kernels.time_fingerprint_bfee",
           "rfbench.protocols.fingerprints._record_magnitudes": "Kernels.time_record_magnitudes",
           "rfbench.protocols.fingerprints._fingerprint_bfee_phase": "Kernels.time_fingerprint_bfee_phase",
           "rfbench.protocols.fingerprints._record_directions": "Kernels.time_record_directions"}


class Kernels:
    params = [_KERNEL_SIZES]
    param_names = ["bytes"]

    def setup(self, n):
        content = _fingerprints()
        self.content = content
        self.buf, self.offsets, self.lengths = _spans(n)
        self.out = np.empty(self.offsets.shape[0], dtype=np.uint64)
        log = _log(n)
        self.log = log
        spans, _, _ = content._bfee_batch(log, [0, log.shape[0]])
        s = spans[0]
        self.b_off, self.b_len = s.offsets, s.lengths
        self.b_shape = (s.nrx.astype(np.int64) - 1) * 3 + (s.ntx.astype(np.int64) - 1)
        self.b_out = np.empty(self.b_off.shape[0], dtype=np.uint64)
        self.b_blank = np.empty(self.b_off.shape[0], dtype=np.uint8)
        self.bodies = [log[o:o + ln] for o, ln in zip(s.offsets[:256].tolist(), s.lengths[:256].tolist())]
        self.time_hash_spans(n)  # compiled (or loaded from the cache) outside the timing
        self.time_fingerprint_bfee(n)
        self.time_record_magnitudes(n)
        # the phase kernels, new on 2026-12-07 (night): the gate also runs this suite on its base commit's code,
        # where they fail alone
        if hasattr(content, "_fingerprint_bfee_phase"):
            self.time_fingerprint_bfee_phase(n)
            self.time_record_directions(n)

    def time_hash_spans(self, n):
        self.content.hash_spans(self.buf, self.offsets, self.lengths)  # the public path: serial below 64 MiB

    def time_fingerprint_bfee(self, n):
        from rfbench._jit import serial_below

        with serial_below(int(self.b_len.sum()), self.content.PARALLEL_MIN_BYTES):
            self._bfee_kernel()

    def _bfee_kernel(self):
        self.content._fingerprint_bfee(self.log, self.b_off, self.b_len, self.b_shape, np.uint64(0), self.b_out,
                                       self.b_blank)

    def time_fingerprint_bfee_phase(self, n):
        from rfbench._jit import serial_below

        with serial_below(int(self.b_len.sum()), self.content.PARALLEL_MIN_BYTES):
            self.content._fingerprint_bfee_phase(self.log, self.b_off, self.b_shape, self.content.DIRECTIONS,
                                                 np.uint64(0), self.b_out, self.b_blank)

    def time_record_directions(self, n):
        # what a phase candidate is confirmed on, one record at a time (256 of them)
        for body in self.bodies:
            self.content._record_directions(body, self.content.DIRECTIONS)

    def time_record_magnitudes(self, n):
        # what a candidate record is confirmed on, one record at a time (256 of them)
        for body in self.bodies:
            self.content._record_magnitudes(body)

    def track_gb_per_s(self, n):
        return n / best_time(lambda: self.time_hash_spans(n)) / 1e9

    track_gb_per_s.unit = "GB/s"

    def track_bfee_gb_per_s(self, n):
        return int(self.b_len.sum()) / best_time(lambda: self.time_fingerprint_bfee(n)) / 1e9

    track_bfee_gb_per_s.unit = "GB/s"

    def track_bfee_phase_gb_per_s(self, n):
        return int(self.b_len.sum()) / best_time(lambda: self.time_fingerprint_bfee_phase(n)) / 1e9

    track_bfee_phase_gb_per_s.unit = "GB/s"

    def track_parallel_speedup(self, n):
        """The span kernel on every thread against one thread, same data, same process: whether running it in
        parallel pays at this size on this machine now (PARALLEL_MIN_BYTES)."""
        from rfbench._jit import serial_below

        def run():
            self.content._hash_spans(self.buf, self.offsets, self.lengths, np.uint64(0), self.out)

        def serial():
            with serial_below(0, 1 << 62):
                run()

        return best_time(serial, 5) / best_time(run, 5)

    track_parallel_speedup.unit = "x"


# ------------------------------------------------------------------------------------------------------------
# Whole passes on the demo trees
# ------------------------------------------------------------------------------------------------------------

_TREES = {"ci": dict(widar=dict(repetitions=1, records=(24, 48)), mmfi=dict(frames=4), bvp=dict(repetitions=1))}
if LARGE:
    _TREES["full"] = dict(widar=dict(repetitions=1, records=(800, 1200)), mmfi=dict(frames=60),
                          bvp=dict(repetitions=13, frames=(2, 38)))
_CORPORA = ("widar", "mmfi", "bvp")


def _ingest_bvp(root):
    from rfbench.datasets.widar_bvp import ingest_bvp

    return ingest_bvp(root)


class DemoTrees:
    params = [list(_TREES), list(_CORPORA), ["recorded", "computed"]]
    param_names = ["tree", "corpus", "sha256"]
    timeout = 600

    def setup_cache(self):
        try:
            from rfbench.datasets import mmfi, widar
            from rfbench.datasets.synthetic import make_mmfi_tree, make_widar_tree
            _content()
        except (ImportError, NotImplementedError):  # an older commit: setup() skips every benchmark
            return {}
        try:
            from rfbench.datasets.synthetic_bvp import make_widar_bvp_tree
            from rfbench.datasets.widar_bvp import ingest_bvp
        except ImportError:  # a commit before the BVP release: its cases are skipped
            make_widar_bvp_tree = None
        out = {}
        for name, kw in _TREES.items():
            for corpus in _CORPORA:
                root = Path(f"content-{corpus}-{name}").resolve()
                shutil.rmtree(root, ignore_errors=True)
                if corpus == "widar":
                    make_widar_tree(root, seed=0, damage=False, **kw["widar"])
                    doc = widar.ingest(root).to_dict()
                elif corpus == "mmfi":
                    make_mmfi_tree(root, seed=0, damage=False, **kw["mmfi"])
                    doc = mmfi.ingest(root).to_dict()
                elif make_widar_bvp_tree is not None:
                    make_widar_bvp_tree(root, seed=0, damage=False, **kw["bvp"])
                    doc = ingest_bvp(root).to_dict()
                else:
                    continue
                out[(name, corpus)] = {"doc": doc, "hashed": _with_sha256(_deep(doc), Path(doc["root"])),
                                       "root": str(root)}
        return out

    def setup(self, cache, tree, corpus, sha256):
        if not cache:
            raise NotImplementedError("no content fingerprinting on this commit")
        content = _content()
        if (tree, corpus) not in cache:
            raise NotImplementedError(f"no {corpus} tree on this commit")
        entry = cache[(tree, corpus)]
        self.doc = entry["hashed"] if sha256 == "recorded" else entry["doc"]
        from rfbench.datasets import mmfi, widar

        root = entry["root"]
        self.ingest = {"widar": lambda: widar.ingest(root), "mmfi": lambda: mmfi.ingest(root, verify_frames=True),
                       "bvp": lambda: _ingest_bvp(root)}[corpus]
        self.fingerprint = content.fingerprint
        index = self.fingerprint(self.doc)  # kernels compiled or loaded outside the timing
        self.mb = index.counts["bytes"] / 1e6

    def time_fingerprint(self, cache, tree, corpus, sha256):
        self.fingerprint(self.doc)

    def track_mb_per_s(self, cache, tree, corpus, sha256):
        return self.mb / best_time(lambda: self.fingerprint(self.doc))

    track_mb_per_s.unit = "MB/s"

    def track_fraction_of_ingest(self, cache, tree, corpus, sha256):
        """Fingerprinting time over ingest time, both measured here, alternately (the best of 3 each)."""
        fp, ing = float("inf"), float("inf")
        for _ in range(3):
            fp = min(fp, best_time(lambda: self.fingerprint(self.doc), 1))
            ing = min(ing, best_time(self.ingest, 1))
        return fp / ing

    track_fraction_of_ingest.unit = "x ingest"


def _deep(doc: dict) -> dict:
    import copy

    return copy.deepcopy(doc)


# ------------------------------------------------------------------------------------------------------------
# The real corpora (track_ only: informational, and skipped without ../shared)
# ------------------------------------------------------------------------------------------------------------

_REAL: dict = {}


class RealCorpora:
    params = [["wiar", "gesture5x6"], ["recorded", "computed"]]
    param_names = ["corpus", "sha256"]
    timeout = 600

    def setup(self, corpus, sha256):
        content = _content()
        if not (CONFORMANCE / corpus).is_dir():
            raise NotImplementedError(f"{CONFORMANCE / corpus} is not available")
        key = (corpus, sha256)
        if key not in _REAL:
            _REAL[key] = conformance_manifest(corpus, with_sha256=sha256 == "recorded")
        self.doc = _REAL[key]
        self.fingerprint = content.fingerprint
        index = self.fingerprint(self.doc)
        self.mb = index.counts["bytes"] / 1e6
        root = Path(self.doc["root"])
        self.paths = [str(root / f["path"]) for r in self.doc["recordings"] for f in r["files"]]

    def track_mb_per_s(self, corpus, sha256):
        return self.mb / best_time(lambda: self.fingerprint(self.doc))

    track_mb_per_s.unit = "MB/s"

    def track_fraction_of_counting(self, corpus, sha256):
        from rfbench.io.intel5300 import count_files

        fp, counting = float("inf"), float("inf")
        for _ in range(3):
            fp = min(fp, best_time(lambda: self.fingerprint(self.doc), 1))
            counting = min(counting, best_time(lambda: count_files(self.paths), 1))
        return fp / counting

    track_fraction_of_counting.unit = "x counting"


if __name__ == "__main__":  # a quick look without asv: python -m benchmarks.bench_content
    for n in _KERNEL_SIZES:
        k = Kernels()
        k.setup(n)
        print(f"kernels {n >> 20} MiB: spans {k.track_gb_per_s(n):.2f} GB/s, bfee {k.track_bfee_gb_per_s(n):.2f} "
              f"GB/s, parallel/serial {k.track_parallel_speedup(n):.2f}x")
    import tempfile

    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        try:
            d = DemoTrees()
            cache = d.setup_cache()
            for tree in _TREES:
                for corpus in ("widar", "mmfi"):
                    for sha in ("recorded", "computed"):
                        b = DemoTrees()
                        b.setup(cache, tree, corpus, sha)
                        print(f"demo {tree} {corpus} sha256 {sha}: {b.mb:.1f} MB, "
                              f"{b.track_mb_per_s(cache, tree, corpus, sha):.0f} MB/s, "
                              f"{b.track_fraction_of_ingest(cache, tree, corpus, sha):.2f} x ingest")
        finally:
            os.chdir(cwd)
    for corpus in ("wiar", "gesture5x6"):
        for sha in ("recorded", "computed"):
            b = RealCorpora()
            try:
                b.setup(corpus, sha)
            except NotImplementedError as exc:
                print(f"{corpus}: skipped ({exc})")
                break
            print(f"{corpus} sha256 {sha}: {b.mb:.1f} MB, {b.track_mb_per_s(corpus, sha):.0f} MB/s, "
                  f"{b.track_fraction_of_counting(corpus, sha):.2f} x counting")
