"""What a generated bfee log takes, declared once (NumPy-free, so ``rfbench generate bfee`` builds its options from
the fields at import time); :func:`rfbench.io.writer.make_bfee_log` writes the log these describe."""

from __future__ import annotations

from dataclasses import dataclass, fields

from rfbench.settings import SettingError, Settings, flag_of, setting

__all__ = ["BfeeLogSettings", "HardwareLogSettings", "MAX_LOG_RECORDS", "RANDOM_ONLY", "HARDWARE_FORMATS"]

_U63 = 2**63 - 1

#: At most this many CSI records per generated log: 50,000 capture-like records are 17 MB and take ~450 MB
#: of working memory (and ~25 s) while they are made.
MAX_LOG_RECORDS = 50_000

#: Fields that shape a random log only; a capture-like log has the capture's fixed shape.
RANDOM_ONLY = ("nrx", "ntx", "non_csi_every", "non_csi_bytes")


@dataclass(frozen=True)
class BfeeLogSettings(Settings):
    """An Intel 5300 bfee log: by default laid out like the CSI Tool's ``sample_0x5_64_3000.dat`` (3x1 CSI records,
    each followed by a 0xC1 frame of 128 body bytes, that capture's header ranges and smooth multipath CSI);
    with ``random``, records of rounded Gaussian CSI of the shape given."""

    seed: int = setting(0, "Seed: the same settings and seed give a byte-identical log.", min=0, max=_U63)
    records: int = setting(2998, "CSI records in the log.", min=1, max=MAX_LOG_RECORDS)
    random: bool = setting(False, "Random records of the shape given by --nrx/--ntx/--non-csi-every/"
                                  "--non-csi-bytes instead of a log like sample_0x5_64_3000.dat.")
    nrx: int = setting(3, "With --random: receive antennas per record.", min=1, max=3)
    ntx: int = setting(1, "With --random: transmit antennas per record.", min=1, max=3)
    non_csi_every: int = setting(1, "With --random: a non-CSI 0xC1 record after every N-th CSI record (0: none).",
                                 min=0, max=MAX_LOG_RECORDS)
    non_csi_bytes: int = setting(128, "With --random: body bytes of each non-CSI record (an 802.11 data-frame "
                                      "header, then random bytes).", min=0, max=0xFFFE)

    def check(self) -> None:
        if self.random:
            return
        for f in fields(self):
            if f.name in RANDOM_ONLY and getattr(self, f.name) != f.default:
                raise SettingError(type(self).__name__, f.name, flag_of(f),
                                   "applies to random logs only; a capture-like log has the capture's fixed shape")


#: The formats ``rfbench generate hardware`` writes (each reader's ``synthesize``; rfbench.io.hwlog.READERS).
HARDWARE_FORMATS = ("atheros", "esp32", "nexmon", "picoscenes")


@dataclass(frozen=True)
class HardwareLogSettings(Settings):
    """A CSI log of another hardware than the Intel 5300, made by its reader's ``synthesize``: random CSI in the
    format's own layout (Atheros CSI Tool: 3x2 at 56 tones, little-endian; ESP32-CSI-Tool: 64-subcarrier LLTF
    lines; nexmon and PicoScenes: their readers' defaults)."""

    format: str = setting("esp32", "Format of the log.", choices=HARDWARE_FORMATS)
    seed: int = setting(0, "Seed: the same settings and seed give a byte-identical log.", min=0, max=_U63)
    records: int = setting(200, "CSI records (lines, frames) in the log.", min=1, max=MAX_LOG_RECORDS)
