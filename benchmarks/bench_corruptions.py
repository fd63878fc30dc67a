"""CSI corruption kernels (rfbench.csi.corruptions), each timed alone and against NumPy's copy bandwidth.

``CorruptionKernels`` times each kernel as :func:`corrupt` calls it (arguments recorded from one public call in
``setup``) on one Intel 5300 receiver log's worth of complex128 CSI, ``packets`` × 30 subcarriers × 3 × 1.
``CorruptionsVsCopy.track_bandwidth_vs_copy`` is the speed of each corruption's kernel as a fraction of a
NumPy copy of the same array into a preallocated output (``numpy.copyto``), both timed in this process: the
goal is at least 0.25 (a kernel reads the CSI, plus its draws, and writes one array, as the copy does). The CI
size is the default; the large one runs only with ``RFBENCH_BENCH_LARGE=1``.
"""

from __future__ import annotations

import os
import time

import numpy as np

from .common import best_time, cached, call_recorded, record_kernel_calls

LARGE = os.environ.get("RFBENCH_BENCH_LARGE") == "1"  # CI sizes only unless set (benchmarks/README.md)
# The gate sets RFBENCH_BENCH_TIMER=cpu: time_* then count this process's CPU time (benchmarks/README.md).
timer = time.process_time if os.environ.get("RFBENCH_BENCH_TIMER") == "cpu" else time.perf_counter

#: The Numba kernel each benchmark below times alone (benchmarks/README.md, "One kernel, one benchmark").
KERNELS = {
    "rfbench.csi.corruptions._noise": "CorruptionKernels.time_noise",
    "rfbench.csi.corruptions._refill": "CorruptionKernels.time_refill",
    "rfbench.csi.corruptions._gain_rx": "CorruptionKernels.time_gain_rx",
    "rfbench.csi.corruptions._gain_subcarrier": "CorruptionKernels.time_gain_subcarrier",
    "rfbench.csi.corruptions._gain_packet": "CorruptionKernels.time_gain_packet",
    "rfbench.csi.corruptions._phase_slope": "CorruptionKernels.time_phase_slope",
}

#: The corruption whose public call records each kernel.
_BY_KERNEL = {"noise": "noise", "refill": "packet-loss", "gain_rx": "dead-antenna",
              "gain_subcarrier": "subcarrier-dropout", "gain_packet": "agc-jump", "phase_slope": "phase-slope"}


def _record(packets):
    try:
        from rfbench.csi.corruptions import corrupt, generator
    except ImportError as exc:
        raise NotImplementedError(str(exc)) from None
    rng = np.random.default_rng(8)
    csi = rng.standard_normal((packets, 30, 3, 1)) + 1j * rng.standard_normal((packets, 30, 3, 1))

    def run():
        for cid in _BY_KERNEL.values():
            corrupt(csi, cid, 3, generator(0, cid, "bench"))

    calls = record_kernel_calls({k: ("rfbench.csi.corruptions", f"_{k}") for k in _BY_KERNEL}, run)
    return csi, calls


class CorruptionKernels:
    params = [2_000] + ([100_000] if LARGE else [])
    param_names = ["packets"]
    timeout = 300

    def setup(self, packets):
        self.csi, self.calls = cached(("corruptions", packets), lambda: _record(packets))

    def time_noise(self, packets):
        call_recorded(self.calls, "noise")

    def time_refill(self, packets):
        call_recorded(self.calls, "refill")

    def time_gain_rx(self, packets):
        call_recorded(self.calls, "gain_rx")

    def time_gain_subcarrier(self, packets):
        call_recorded(self.calls, "gain_subcarrier")

    def time_gain_packet(self, packets):
        call_recorded(self.calls, "gain_packet")

    def time_phase_slope(self, packets):
        call_recorded(self.calls, "phase_slope")


class CorruptionsVsCopy:
    params = [["noise", "refill", "gain_rx", "gain_subcarrier", "gain_packet", "phase_slope"],
              [2_000] + ([100_000] if LARGE else [])]
    param_names = ["kernel", "packets"]
    timeout = 300

    def setup(self, kernel, packets):
        self.csi, self.calls = cached(("corruptions", packets), lambda: _record(packets))
        self.out = np.empty_like(self.csi)

    def track_bandwidth_vs_copy(self, kernel, packets):
        """Copy time / kernel time on the same CSI (1 = as fast as numpy.copyto; goal >= 0.25)."""
        copy = best_time(lambda: np.copyto(self.out, self.csi), repeat=7)
        own = best_time(lambda: call_recorded(self.calls, kernel), repeat=7)
        return copy / own

    track_bandwidth_vs_copy.unit = "copy time / kernel time"
