"""The one in-memory form every non-Intel CSI reader returns (issue 26): :class:`HardwareLog`.

Each format module (``rfbench/io/atheros.py``, ``esp32.py``, ``nexmon.py``, ``picoscenes.py``) exposes

- ``FORMAT``: its name as ``--format`` spells it (``"atheros"``, ``"esp32"``, ``"nexmon"``, ``"picoscenes"``);
- ``sniff(head: bytes) -> bool``: whether the first bytes of a file (at most :data:`SNIFF_BYTES`) look like
  this format — cheap, never raises;
- ``read(source, **options) -> HardwareLog``: a path or bytes-like, read through the safe opener
  (:func:`rfbench.io.files.read_input_bytes`); bad records are skipped and counted in ``skipped``, good ones
  kept; a file with no record of the format raises :class:`~rfbench.errors.FormatError` (one line).

The parse command, the archive writer, ``ingest files --template`` and ``windows`` work on this form only, so a
new format is one module and one entry in :data:`READERS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

__all__ = ["HardwareLog", "SNIFF_BYTES", "FORMATS"]

#: How many leading bytes ``sniff`` is given.
SNIFF_BYTES = 4096

#: Every format rfbench reads, Intel 5300 first, as ``parse --format`` accepts them.
FORMATS = ("intel5300", "atheros", "nexmon", "esp32", "picoscenes")


@dataclass(frozen=True)
class HardwareLog:
    """The records of one CSI log of any hardware but the Intel 5300 (whose reader keeps its own form).

    Attributes
    ----------
    format : str
        One of :data:`FORMATS`.
    variant : str
        The frame layout the bytes were read as (e.g. ``"atheros"``, ``"atheros-pull10"``, ``"nexmon"``,
        ``"nexmon-pull46"``, ``"esp32-csi-tool"``, ``"rxs"``).
    csi : ndarray
        ``(records, subcarriers, rx, tx)`` complex64; a record with fewer tones or antennas than the file's
        largest holds its values first and zeros after (as csiread pads).
    num_tones, n_rx, n_tx : ndarray
        ``(records,)`` int32: each record's own tones and antennas.
    subcarriers : ndarray
        ``(subcarriers,)`` int32 subcarrier indices, or ``(records, subcarriers)`` where they vary per record.
    meta : mapping of str to ndarray
        Per-record metadata, one ``(records,)`` array per documented name (timestamps, RSSI, noise, rate, MAC,
        sequence number, core/spatial stream, chanspec...); docs/parse.md lists each format's names.
    chip, bandwidth_mhz : str or None, int or None
        What the bytes (or the caller's ``--chip``) determined; None where the format has no such notion.
    decided : mapping of str to str
        Why each of ``variant``, ``chip``, ``bandwidth_mhz``, ``endian`` (where they apply) is what it is, in
        words the summary shows (e.g. ``{"chip": "chip-version field 0x0065 (bcm43455c0)"}``).
    skipped : mapping of str to int
        Records skipped, by reason.
    n_bytes : int
        Size of the input in bytes.
    source : str or None
        The path read, if any.
    """

    format: str
    variant: str
    csi: np.ndarray
    num_tones: np.ndarray
    n_rx: np.ndarray
    n_tx: np.ndarray
    subcarriers: np.ndarray
    meta: Mapping[str, np.ndarray] = field(default_factory=dict)
    chip: str | None = None
    bandwidth_mhz: int | None = None
    decided: Mapping[str, str] = field(default_factory=dict)
    skipped: Mapping[str, int] = field(default_factory=dict)
    n_bytes: int = 0
    source: str | None = None

    @property
    def n_records(self) -> int:
        """Number of records kept."""
        return int(self.csi.shape[0])

    def __len__(self) -> int:
        return self.n_records

    @property
    def n_skipped(self) -> int:
        """Records skipped, all reasons together."""
        return int(sum(self.skipped.values()))
