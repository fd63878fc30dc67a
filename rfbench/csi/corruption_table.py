"""The corruptions ``rfbench windows --corrupt`` applies to CSI, and the physical meaning of their five severities.

This table is the one place each corruption and its severities are declared: the kernels
(:mod:`rfbench.csi.corruptions`), the windows setting that names them, ``rfbench robustness`` and
docs/robustness-suite.md read it. Standard library only (the command line builds its help from it at start-up).
"""

from __future__ import annotations

from dataclasses import dataclass

from rfbench.errors import ValidationError

__all__ = ["Corruption", "CORRUPTIONS", "SEVERITIES", "AGC_STEP_PROBABILITY", "parse_corruption", "corruption"]

#: Severities are 1 (mildest) to 5 (harshest).
SEVERITIES = (1, 2, 3, 4, 5)
#: agc-jump: the probability that the receiver's gain steps at a packet (after the first).
AGC_STEP_PROBABILITY = 0.05


@dataclass(frozen=True)
class Corruption:
    """One corruption: its ``id``, what it does, the unit of its ``levels`` (one value per severity 1…5)."""

    id: str
    meaning: str
    unit: str
    levels: tuple

    def level(self, severity: int) -> float:
        """The physical value of ``severity`` (1…5)."""
        return self.levels[severity - 1]


CORRUPTIONS: dict[str, Corruption] = {c.id: c for c in (
    Corruption("noise", "additive white complex Gaussian noise at this signal-to-noise ratio, the signal power "
                        "being the mean squared CSI magnitude of the unit corrupted (an Intel 5300 receiver log, "
                        "an MM-Fi frame)",
               "SNR (dB)", (30.0, 20.0, 10.0, 5.0, 0.0)),
    Corruption("packet-loss", "each packet is lost independently with this probability; lost packets are refilled "
                              "by linear interpolation over the packet index between the nearest received ones "
                              "(held at the ends), as the windows resampler does",
               "fraction of packets", (0.1, 0.2, 0.3, 0.5, 0.7)),
    Corruption("burst-loss", "one run of consecutive packets, this fraction of the unit's packets long and starting "
                             "at a uniformly drawn packet, is lost; refilled like packet-loss",
               "fraction of packets", (0.1, 0.2, 0.3, 0.5, 0.7)),
    Corruption("dead-antenna", "one receive antenna, drawn uniformly, is attenuated by this much (at severity 5 it "
                               "is dead: its CSI is zero)",
               "attenuation (dB)", (3.0, 6.0, 10.0, 20.0, float("inf"))),
    Corruption("subcarrier-dropout", "this fraction of the subcarriers (rounded to the nearest count), drawn "
                                     "without replacement, carries no CSI (zero) in every packet",
               "fraction of subcarriers", (0.1, 0.2, 0.3, 0.4, 0.5)),
    Corruption("agc-jump", f"the receiver gain steps up or down (equally likely) by this much at each packet with "
                           f"probability {AGC_STEP_PROBABILITY:g}; steps accumulate over the unit's packets",
               "gain step (dB)", (1.0, 2.0, 3.0, 6.0, 10.0)),
    Corruption("phase-slope", "each packet gets a timing offset τ drawn uniformly within ± this bound: a linear "
                              "phase −2π·f·τ across subcarriers at frequency offset f (subcarrier index × 312.5 kHz)",
               "timing offset bound (ns)", (10.0, 25.0, 50.0, 100.0, 200.0)),
    Corruption("truncation", "the capture is cut short: this fraction of the unit's last packets (rounded to the "
                             "nearest count) is lost, refilled by holding the last received packet",
               "fraction of packets", (0.1, 0.2, 0.3, 0.5, 0.7)),
)}


def corruption(corruption_id: str) -> Corruption:
    """The corruption named ``corruption_id``; an unknown name is a :class:`ValidationError` listing them."""
    found = CORRUPTIONS.get(corruption_id)
    if found is None:
        raise ValidationError(f"unknown corruption {corruption_id!r}; use one of {', '.join(CORRUPTIONS)}")
    return found


def parse_corruption(text: str) -> tuple[str, int]:
    """``"ID:SEVERITY"`` (e.g. ``noise:3``) as ``(id, severity)``; anything else is a :class:`ValidationError`."""
    if not isinstance(text, str) or text.count(":") != 1:
        raise ValidationError(f"a corruption is ID:SEVERITY (e.g. noise:3), not {text!r}")
    name, level = text.split(":")
    corruption(name)
    if level not in tuple(str(s) for s in SEVERITIES):
        raise ValidationError(f"corruption severity must be one of {', '.join(map(str, SEVERITIES))}, not {level!r}")
    return name, int(level)
