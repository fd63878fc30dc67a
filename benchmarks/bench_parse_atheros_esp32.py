"""Atheros CSI Tool and ESP32-CSI-Tool parsing: time, peak memory, and speed relative to csiread on the same file.

Logs are generated in ``setup`` by each reader's own ``synthesize`` (seeded), so the suite needs no data files:
``atheros`` is 400 records of 3x2 at 56 tones with 1,040-byte payloads (~0.76 MB, the shared capture's shape
and size), ``esp32`` 1,000 LLTF lines of 128 values (~0.5 MB). These are the CI-sized cases the gate compares.
With ``RFBENCH_BENCH_LARGE=1`` (``make bench-large``, never in CI) the larger captures run too: 10,000 Atheros
records (~19 MB) and 40,000 ESP32 lines (~21 MB).

``track_speedup_vs_csiread`` is csiread 1.4.1's time per file over rfbench's, each reading the same path,
rounds alternating between the two tools in this process, best round of each (csiread ``Atheros(nrxnum=3,
ntxnum=2, tones=56).read(endian="little")`` and ``ESP32(csi_only=False).read()``: the metadata both give).

``Kernels`` times each reader's Numba kernels alone, as ``read`` calls them (``KERNELS`` names which
benchmark times which kernel).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numpy as np

from .common import cached, call_recorded, record_kernel_calls, throughput_ratio

LARGE = os.environ.get("RFBENCH_BENCH_LARGE") == "1"  # CI sizes only unless set (benchmarks/README.md)
# The gate sets RFBENCH_BENCH_TIMER=cpu: time_* then count this process's CPU time (benchmarks/README.md).
timer = time.process_time if os.environ.get("RFBENCH_BENCH_TIMER") == "cpu" else time.perf_counter
CASES = ["atheros", "esp32"] + (["atheros_large", "esp32_large"] if LARGE else [])

#: The Numba kernel each benchmark below times alone (benchmarks/README.md, "One kernel, one benchmark").
KERNELS = {
    "rfbench.io.atheros._probe": "Kernels.time_atheros_probe",
    "rfbench.io.atheros._scan": "Kernels.time_atheros_scan",
    "rfbench.io.atheros._unpack": "Kernels.time_atheros_unpack",
    "rfbench.io.esp32._scan": "Kernels.time_esp32_scan",
    "rfbench.io.esp32._decode": "Kernels.time_esp32_decode",
}


def _make(case: str) -> bytes:
    try:
        from rfbench.io import atheros, esp32
    except ImportError as exc:  # an older commit without these readers
        raise NotImplementedError(str(exc)) from None
    rng = np.random.default_rng(3)
    if case.startswith("atheros"):
        n = 10_000 if case.endswith("large") else 400
        return atheros.synthesize(rng, n, nr=3, nc=2, tones=56, payload_len=1040)
    n = 40_000 if case.endswith("large") else 1_000
    return esp32.synthesize(rng, n, header=False)


def _module(case: str):
    from rfbench.io import atheros, esp32

    return atheros if case.startswith("atheros") else esp32


class _Case:
    params = [CASES]
    param_names = ["log"]
    timeout = 300

    def setup(self, case):
        self.data = _make(case)
        self.module = _module(case)
        self.tmp = tempfile.TemporaryDirectory()
        self.path = Path(self.tmp.name) / ("log.dat" if case.startswith("atheros") else "log.csv")
        self.path.write_bytes(self.data)
        self.module.read(self.path)  # compiles the kernels outside the timing

    def teardown(self, case):
        if getattr(self, "tmp", None) is not None:
            self.tmp.cleanup()


class Parse(_Case):
    """Whole read from a path: bytes, layout, framing, decoding, metadata."""

    def time_read(self, case):
        self.module.read(self.path)

    def peakmem_read(self, case):
        self.module.read(self.path)


class VersusCsiread(_Case):
    """rfbench vs csiread on the same file, in this process."""

    repeat = 1
    number = 1

    def setup(self, case):
        super().setup(case)
        try:
            import csiread
        except ImportError:
            raise NotImplementedError("csiread is not installed") from None
        self.csiread = csiread

    def _theirs(self):
        if self.module.FORMAT == "atheros":
            c = self.csiread.Atheros(str(self.path), nrxnum=3, ntxnum=2, tones=56, if_report=False)
            c.read(endian="little")
        else:
            c = self.csiread.ESP32(str(self.path), if_report=False, csi_only=False)
            c.read()
        return c

    def track_speedup_vs_csiread(self, case):
        """csiread's time per file over rfbench's (best of alternating rounds)."""
        rounds, batch = (6, 2) if case.endswith("large") else (12, 10)
        return throughput_ratio(lambda: self.module.read(self.path), self._theirs, rounds, batch)

    track_speedup_vs_csiread.unit = "x csiread"

    def time_csiread(self, case):
        self._theirs()


class Kernels:
    """Each reader's kernels alone, with the arguments ``read`` gives them on the CI-sized logs."""

    timeout = 300

    def setup(self):
        self.calls = cached(("hw_a_kernels",), self._record)

    @staticmethod
    def _record():
        try:
            from rfbench.io import atheros, esp32
        except ImportError as exc:
            raise NotImplementedError(str(exc)) from None
        ath, esp = _make("atheros"), _make("esp32")
        calls = record_kernel_calls({"atheros_probe": ("rfbench.io.atheros", "_probe"),
                                     "atheros_scan": ("rfbench.io.atheros", "_scan"),
                                     "atheros_unpack": ("rfbench.io.atheros", "_unpack")},
                                    lambda: atheros.read(ath))
        calls.update(record_kernel_calls({"esp32_scan": ("rfbench.io.esp32", "_scan"),
                                          "esp32_decode": ("rfbench.io.esp32", "_decode")},
                                         lambda: esp32.read(esp)))
        return calls

    def time_atheros_probe(self):
        call_recorded(self.calls, "atheros_probe")

    def time_atheros_scan(self):
        call_recorded(self.calls, "atheros_scan")

    def time_atheros_unpack(self):
        call_recorded(self.calls, "atheros_unpack")

    def time_esp32_scan(self):
        call_recorded(self.calls, "esp32_scan")

    def time_esp32_decode(self):
        call_recorded(self.calls, "esp32_decode")
