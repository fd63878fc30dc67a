"""The settings of ``rfbench robustness``: which corruptions, severities and seeds a sweep runs (standard library
only: the command line builds its options from them at start-up)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from rfbench.csi.corruption_table import CORRUPTIONS, SEVERITIES
from rfbench.errors import ValidationError
from rfbench.settings import Settings, setting

__all__ = ["RobustnessSettings", "parse_severities", "cell_name", "MAX_CELLS"]

#: At most this many cells in one sweep (8 corruptions × 5 severities × 25 seeds).
MAX_CELLS = 1000


def parse_severities(text: str) -> tuple[int, ...]:
    """``"1-5"`` (a range) or ``"1,3,5"`` (a list) as sorted severities; each 1…5, none twice."""
    if not isinstance(text, str) or not text.strip():
        raise ValidationError("severities must be a range (1-5) or a list (1,3,5)")
    text = text.strip()
    allowed = {str(s) for s in SEVERITIES}
    if "-" in text:
        lo, _, hi = text.partition("-")
        if lo not in allowed or hi not in allowed or int(lo) > int(hi):
            raise ValidationError(f"severities {text!r}: a range is LOW-HIGH with 1 <= LOW <= HIGH <= 5")
        return tuple(range(int(lo), int(hi) + 1))
    parts = text.split(",")
    if any(p not in allowed for p in parts) or len(set(parts)) != len(parts):
        raise ValidationError(f"severities {text!r}: a list holds each of 1 to 5 at most once (e.g. 1,3,5)")
    return tuple(sorted(int(p) for p in parts))


@dataclass(frozen=True)
class RobustnessSettings(Settings):
    """Which cells a sweep runs.

    Examples
    --------
    >>> import rfbench
    >>> rfbench.RobustnessSettings(corruptions=("noise",), severities="1,3", seeds=2).argv()
    ['--corruptions', 'noise', '--severities', '1,3', '--seeds', '2']
    """

    corruptions: tuple = setting(tuple(CORRUPTIONS), "Corruptions to sweep, comma-separated: "
                                 + ", ".join(CORRUPTIONS) + " (docs/robustness-suite.md).", choices=tuple(CORRUPTIONS))
    severities: str = setting("1-5", "Severities: a range (1-5) or a list (1,3,5), each 1 (mild) to 5 (harsh).")
    seeds: int = setting(1, "Seeds per corruption and severity: the corruption seeds 0 … N-1.", min=1, max=25)
    reference: Optional[Path] = setting(None, "A reference model's summary.json over the same cells: adds the "
                                              "corruption error (CE, mCE) and relative CE against it.", kind="path",
                                        role="reference")

    def check(self) -> None:
        if len(set(self.corruptions)) != len(self.corruptions):
            raise ValidationError("corruptions lists a corruption twice")
        parse_severities(self.severities)

    @property
    def severity_list(self) -> tuple[int, ...]:
        return parse_severities(self.severities)

    def record(self) -> dict:
        """The cells as a summary records them (its ``settings``): corruptions, severities (a list) and seeds."""
        return {"corruptions": list(self.corruptions), "severities": list(self.severity_list), "seeds": self.seeds}

    def cells(self) -> list[tuple[str, int, int]]:
        """``(corruption, severity, seed)`` of every cell, in sweep order."""
        out = [(c, s, k) for c in self.corruptions for s in self.severity_list for k in range(self.seeds)]
        if len(out) > MAX_CELLS:
            raise ValidationError(f"{len(out)} cells: a sweep runs at most {MAX_CELLS}")
        return out


def cell_name(corruption_id: str, severity: int, seed: int) -> str:
    """The folder of one cell under ``DIR/cells``."""
    return f"{corruption_id}-{severity}-seed{seed}"
