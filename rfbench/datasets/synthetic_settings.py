"""What the synthetic tree generators take, declared once (NumPy-free, so ``rfbench generate`` builds its options
from the fields at import time).

:class:`WidarTreeSettings` for :func:`rfbench.datasets.synthetic.make_widar_tree`, :class:`MmfiTreeSettings` for
:func:`~rfbench.datasets.synthetic.make_mmfi_tree`; see :mod:`rfbench.settings` for how options, argv and checks
derive from the fields. The generators build these from their keyword arguments, so a bound holds whoever calls.
"""

from __future__ import annotations

from dataclasses import dataclass

from rfbench.settings import SettingError, Settings, setting

__all__ = ["WidarTreeSettings", "MmfiTreeSettings", "MMFI_SUBJECTS", "MMFI_ACTIONS", "DEFAULT_MMFI_SUBJECTS",
           "DEFAULT_MMFI_ACTIONS", "MAX_WIDAR_REPETITIONS", "MAX_WIDAR_RECORDS", "MAX_MMFI_FRAMES", "MAX_BVP_FRAMES"]

_U63 = 2**63 - 1

#: MM-Fi's subjects S01…S40 and actions A01…A27 (the dataset's own numbering; rfbench.datasets.mmfi holds the same).
MMFI_SUBJECTS = tuple(f"S{i:02d}" for i in range(1, 41))
MMFI_ACTIONS = tuple(f"A{i:02d}" for i in range(1, 28))
#: Two subjects of each of MM-Fi's four environments, so MM-Fi's S2 and S3 settings have both sides.
DEFAULT_MMFI_SUBJECTS = ("S01", "S02", "S11", "S12", "S21", "S22", "S31", "S32")
DEFAULT_MMFI_ACTIONS = ("A01", "A02", "A03", "A13")

#: Caps: a Widar3.0 name's repetition is 1–99 (what ``ingest widar`` reads: a larger number would make a file
#: rfbench itself leaves out); a file of 20,000 records is 4.3 MB and takes ~140 MB of working memory while it
#: is made; MM-Fi's own recordings have 297 frames.
MAX_WIDAR_REPETITIONS = 99
MAX_WIDAR_RECORDS = 20_000
MAX_MMFI_FRAMES = 1000
#: Widar3.0's BVP files hold up to ~40 steps; 1000 keeps a file (20·20·1000 doubles, 3.2 MB) within what ingest
#: reads of one file.
MAX_BVP_FRAMES = 1000


@dataclass(frozen=True)
class WidarTreeSettings(Settings):
    """A Widar3.0-like tree: real bfee logs (``CSI/<date>/<user>/<user>-<g>-<l>-<o>-<r>-r<N>.dat``), or with
    ``kind="bvp"`` velocity profiles (``BVP/<date>-VS/[6-link/]<user>/<user>-<g>-<l>-<o>-<r>-<params>-L0.mat``)."""

    seed: int = setting(0, "Seed: the same settings and seed give byte-identical files.", min=0, max=_U63)
    repetitions: int = setting(1, "Repetitions per (date, user, gesture, location, orientation); each adds about "
                                  "43 recordings of 6 receiver files.", min=1, max=MAX_WIDAR_REPETITIONS)
    records: tuple = setting((24, 48), "CSI records per receiver file: LOW,HIGH (inclusive; 3 antennas x 1 Tx, "
                                       "~1 kHz).", kind="ints", min=1, max=MAX_WIDAR_RECORDS, metavar="LOW,HIGH")
    clean: bool = setting(False, "Plant no problems (by default the tree holds an empty file, odd names, an "
                                 "unknown date folder, a missing receiver, a truncated and an unparseable log, "
                                 "as a real download does; a BVP tree: a T = 0 file, odd names, an unknown "
                                 "gesture, a file that is not a MAT-file, a missing and a mis-shaped variable).")
    kind: str = setting("csi", "Which release to write: csi (receiver logs), bvp (velocity profiles, both "
                               "folder layouts: with and without 6-link) or both (CSI/ and BVP/ in one folder, "
                               "sharing captures).", choices=("csi", "bvp", "both"))
    frames: tuple = setting((4, 12), "BVP time steps T per file with --kind bvp or both: LOW,HIGH (inclusive; "
                                     "10 Hz; the real release has T up to ~40).", kind="ints", min=1,
                            max=MAX_BVP_FRAMES, metavar="LOW,HIGH")

    def check(self) -> None:
        for name, value in (("records", self.records), ("frames", self.frames)):
            if len(value) != 2 or value[0] > value[1]:
                raise SettingError(type(self).__name__, name, f"--{name}",
                                   f"must be LOW,HIGH with LOW <= HIGH, got {','.join(map(str, value))}")


@dataclass(frozen=True)
class MmfiTreeSettings(Settings):
    """An MM-Fi-like tree (``E0x/Syy/Azz/{ground_truth.npy, wifi-csi/frameNNN.mat}``)."""

    seed: int = setting(0, "Seed: the same settings and seed give byte-identical files.", min=0, max=_U63)
    subjects: tuple = setting(DEFAULT_MMFI_SUBJECTS, "Subjects to write, comma-separated, of S01…S40 (each under "
                                                     "its MM-Fi environment).", kind="strs")
    actions: tuple = setting(DEFAULT_MMFI_ACTIONS, "Actions to write, comma-separated, of A01…A27.", kind="strs")
    frames: int = setting(6, "WiFi frames per recording (MM-Fi's own have 297).", min=1, max=MAX_MMFI_FRAMES)
    clean: bool = setting(False, "Plant no problems (by default the tree holds an empty frame, a ground truth of "
                                 "the wrong shape, a recording without ground truth, a subject under the wrong "
                                 "environment and stray files).")

    def check(self) -> None:
        owner = type(self).__name__
        for name, allowed, span in (("subjects", MMFI_SUBJECTS, "S01…S40"), ("actions", MMFI_ACTIONS, "A01…A27")):
            values = getattr(self, name)
            unknown = [v for v in values if v not in allowed]
            if unknown:
                raise SettingError(owner, name, f"--{name}", f"unknown MM-Fi {name} {', '.join(unknown)} "
                                                             f"(MM-Fi has {span})")
            if len(set(values)) != len(values):
                raise SettingError(owner, name, f"--{name}", f"lists a value twice: {','.join(values)}")
