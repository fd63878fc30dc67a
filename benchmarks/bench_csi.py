"""CSI processing kernels: subcarrier resampling (rfbench.csi.subcarrier).

``SubcarrierKernels`` times the interpolation kernel alone, called as :func:`resample_subcarriers` calls it
(arguments recorded from one public call in ``setup``), on ``records`` 3x1 records resampled from the Intel
5300's 30 subcarrier groups to the 56 of an HT20 grid. The CI size is the default; the large one runs only
with ``RFBENCH_BENCH_LARGE=1``.
"""

from __future__ import annotations

import os
import time

import numpy as np

from .common import cached, call_recorded, record_kernel_calls

LARGE = os.environ.get("RFBENCH_BENCH_LARGE") == "1"  # CI sizes only unless set (benchmarks/README.md)
# The gate sets RFBENCH_BENCH_TIMER=cpu: time_* then count this process's CPU time (benchmarks/README.md).
timer = time.process_time if os.environ.get("RFBENCH_BENCH_TIMER") == "cpu" else time.perf_counter

#: The Numba kernel each benchmark below times alone (benchmarks/README.md, "One kernel, one benchmark").
KERNELS = {
    "rfbench.csi.subcarrier._interp_rows": "SubcarrierKernels.time_interp_rows",
}


class SubcarrierKernels:
    params = [2_000] + ([200_000] if LARGE else [])
    param_names = ["records"]
    timeout = 300

    def setup(self, records):
        self.calls = cached(("interp", records), lambda: self._record(records))

    @staticmethod
    def _record(records):
        try:
            from rfbench.csi.subcarrier import resample_subcarriers
        except ImportError as exc:
            raise NotImplementedError(str(exc)) from None
        rng = np.random.default_rng(6)
        csi = (rng.normal(size=(records, 30, 3, 1)) + 1j * rng.normal(size=(records, 30, 3, 1))).astype(np.complex64)
        return record_kernel_calls({"interp_rows": ("rfbench.csi.subcarrier", "_interp_rows")},
                                   lambda: resample_subcarriers(csi, "intel30-20", "ht20-56", axis=1))

    def time_interp_rows(self, records):
        call_recorded(self.calls, "interp_rows")
