"""The windows' corruption hook: the CSI of one unit (an Intel 5300 receiver log, an MM-Fi WiFi frame) corrupted as
the settings' ``corrupt`` and ``corrupt_seed`` say, before its features are computed.

Each unit draws from its own generator, keyed by the seed, the corruption, the recording id and the unit within
the recording (the receiver, the frame number): rows, chunks and reading threads do not change a bit of it.
"""

from __future__ import annotations

import numpy as np

from rfbench.csi.corruption_table import corruption, parse_corruption
from rfbench.datasets.windows.settings import WindowSettings

__all__ = ["corrupt_receiver", "corrupt_mmfi_frame", "corruption_note"]


def _apply(s: WindowSettings, csi: np.ndarray, recording: str, part: str, grid: str) -> np.ndarray:
    from rfbench.csi.corruptions import corrupt, generator
    from rfbench.csi.subcarrier import GRIDS

    cid, severity = parse_corruption(s.corrupt)
    index = np.asarray(GRIDS[grid], dtype=np.int64) if len(GRIDS[grid]) == csi.shape[1] else None
    return corrupt(csi, cid, severity, generator(s.corrupt_seed, cid, recording, part), index)


def corrupt_receiver(s: WindowSettings, csi: np.ndarray, recording: str, receiver) -> np.ndarray:
    """One receiver's complex CSI (packet, 30, rx, tx) corrupted (complex128); ``receiver`` is None for a
    recording of one log."""
    grid = "intel30-20" if s.bandwidth == 20 else "intel30-40"
    return _apply(s, csi, recording, "" if receiver is None else f"receiver {receiver}", grid)


def corrupt_mmfi_frame(s: WindowSettings, amp: np.ndarray, phase: np.ndarray, recording: str,
                       frame: int) -> tuple[np.ndarray, np.ndarray]:
    """One MM-Fi frame's ``CSIamp``, ``CSIphase`` (3, 114, 10) corrupted: the complex CSI ``amp·e^{j·phase}`` over
    its 10 packets, back as amplitude and phase (radians, in (−π, π])."""
    from rfbench.csi.corruptions import amp_phase_to_csi, csi_to_amp_phase

    csi = _apply(s, amp_phase_to_csi(amp, phase), recording, f"frame {frame}", "ht40-114")
    return csi_to_amp_phase(csi)


def corruption_note(s: WindowSettings, kind: str) -> str:
    """The index's note saying what was corrupted and how."""
    cid, severity = parse_corruption(s.corrupt)
    c = corruption(cid)
    unit = ("each WiFi frame's complex CSI CSIamp·e^(j·CSIphase) over its 10 packets (phase features are its angle "
            "in (−π, π])" if kind == "mmfi" else "each receiver log's complex CSI before any subcarrier or packet "
            "resampling (features of the raw CSI then go through float64)")
    return (f"corrupted: {cid} at severity {severity} ({c.unit} {c.level(severity):g}), seed {s.corrupt_seed}: "
            f"{c.meaning}; applied to {unit}, each unit drawing from its own generator keyed by the seed, "
            "the corruption, the recording id and the receiver or frame")
