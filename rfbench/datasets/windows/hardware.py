"""Windows of logs of other CSI hardware than the Intel 5300 (issue 26): the receiver's CSI, on the grid the window
settings ask for.

A manifest from ``rfbench ingest files`` marks each such log with its ``format`` (Atheros CSI Tool, ESP32-CSI-Tool,
nexmon, PicoScenes). Windows read it with that format's reader and map its own subcarriers (its data subcarriers
only, ascending: a format's ``NULL_SUBCARRIERS``, such as the ESP32 LLTF's guard and DC bins, or its
``null_subcarriers(bandwidth_mhz)``, such as nexmon's DC and guard bins, are left out, and so is an FFT grid's
unpaired lowest bin, so that the band is symmetric about DC) to the settings' grid (``--subcarriers`` 30:
``intel30-20``/``intel30-40`` by ``--bandwidth``; 56: ``ht20-56``; 114: ``ht40-114``) by
:func:`rfbench.csi.subcarrier.resample_subcarriers` with ``span="band"`` (band edges aligned: a grid of the same
band maps index to index, a narrower one is stretched), as the index declares. Raw CSI only (``--csi scaled`` is the
Intel 5300's ``get_scaled_csi.m``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rfbench.errors import ValidationError

__all__ = ["HardwareCsi", "read_hardware_csi", "corpus_format", "SPAN", "target_grid", "GRIDS", "on_grid"]

#: How a hardware log's subcarriers are matched to the settings' grid.
SPAN = "band"


@dataclass(frozen=True)
class HardwareCsi:
    """One log's CSI on the settings' grid: ``csi`` ``(records, subcarriers, rx, tx)`` complex64, each record's
    ``nrx``/``ntx`` (the window build's odd-records policy reads them like an Intel 5300 log's)."""

    csi: np.ndarray
    nrx: np.ndarray
    ntx: np.ndarray

    @property
    def n_records(self) -> int:
        return int(self.csi.shape[0])

    def complex_csi(self) -> np.ndarray:
        return self.csi


def target_grid(subcarriers: int, bandwidth: int) -> str:
    """The grid name windows map a hardware log to."""
    if subcarriers == 30:
        return "intel30-20" if bandwidth == 20 else "intel30-40"
    return {56: "ht20-56", 114: "ht40-114"}[subcarriers]


def corpus_format(manifest) -> str | None:
    """The one hardware format of a manifest's logs (their ``format``), None for Intel 5300 logs; a manifest
    mixing formats is refused."""
    found = {f.get("format") for r in manifest.recordings for f in r.get("files", [])}
    if found == {None}:
        return None
    if len(found) > 1:
        shown = ", ".join(sorted("intel5300" if f is None else str(f) for f in found))
        raise ValidationError(f"the manifest mixes CSI formats ({shown}); windows are made of one format's logs")
    return str(found.pop())


def _data_columns(log, indices=None, bandwidth_mhz=None) -> tuple[np.ndarray, np.ndarray]:
    """The columns of ``log.csi`` holding data subcarriers, ascending by index, each index once, and those
    indices; of ``indices`` (one record group's own, :func:`_groups`) at ``bandwidth_mhz`` when given, else of the
    log's one subcarrier row at its bandwidth."""
    from rfbench.io import hwlog

    idx = np.asarray(log.subcarriers if indices is None else indices)
    if idx.ndim != 1:
        raise ValidationError("records of this log have different subcarrier sets: map each group (_groups)")
    reader = hwlog.reader(log.format)
    if hasattr(reader, "null_subcarriers"):  # bins that depend on the log's bandwidth (nexmon)
        null = set(reader.null_subcarriers(log.bandwidth_mhz if bandwidth_mhz is None else bandwidth_mhz))
    else:
        null = set(getattr(reader, "NULL_SUBCARRIERS", ()))
    seen: dict[int, int] = {}
    for col, k in enumerate(idx.tolist()):
        if k not in null and k not in seen:
            seen[k] = col
    order = sorted(seen)
    if order and order[0] < 0 < order[-1]:  # a band symmetric about DC (an FFT's -N/2..N/2-1 loses its -N/2)
        edge = min(-order[0], order[-1])
        order = [k for k in order if -edge <= k <= edge]
    return np.array([seen[k] for k in order], dtype=np.intp), np.array(order, dtype=np.float64)


def _groups(log):
    """``(records, indices, bandwidth_mhz)`` for each set of records sharing a subcarrier set: the whole log when it
    has one row of indices, else one group per distinct (tones, row) — each record's own first ``num_tones``
    indices (the rest of a row is padding) — at the bandwidth its tones imply where the format says
    (:func:`rfbench.io.nexmon.tone_bandwidth`), else the log's."""
    from rfbench.io import hwlog

    idx = np.asarray(log.subcarriers)
    if idx.ndim == 1:
        return [(slice(None), idx, log.bandwidth_mhz)]
    tones = np.asarray(log.num_tones, dtype=np.int64)
    keys, inverse = np.unique(np.column_stack([tones, idx]), axis=0, return_inverse=True)
    inverse = inverse.ravel()
    of_tones = getattr(hwlog.reader(log.format), "tone_bandwidth", None)
    return [(np.flatnonzero(inverse == g), key[1:1 + int(key[0])],
             of_tones(int(key[0])) if of_tones is not None else log.bandwidth_mhz) for g, key in enumerate(keys)]


def read_hardware_csi(data: bytes, fmt: str, where: str, subcarriers: int, bandwidth: int) -> HardwareCsi:
    """Read one log of ``fmt`` and put its CSI on the settings' grid (see the module docstring). A log whose
    records differ in subcarrier sets (an Atheros log of 56 and 114 tones, a nexmon capture of several
    bandwidths, an ESP32 line with a short list) is mapped group by group, each record from its own set."""
    from rfbench.errors import FormatError
    from rfbench.io.parse_files import read_hardware

    try:
        log = read_hardware(data, fmt)
    except FormatError as exc:
        raise ValidationError(f"{where}: {exc}") from None
    mapped = on_grid(log, target_grid(subcarriers, bandwidth), where)
    return HardwareCsi(mapped, np.asarray(log.n_rx), np.asarray(log.n_tx))


#: Every grid :func:`target_grid` gives (what the content check fingerprints a hardware record on).
GRIDS = tuple(target_grid(n, mhz) for n, mhz in ((30, 20), (30, 40), (56, 20), (114, 20)))


def on_grid(log, grid: str, where: str) -> np.ndarray:
    """A hardware log's CSI on ``grid`` (one of :data:`GRIDS`): ``(records, grid's subcarriers, rx, tx)``
    complex64, each record from its own group's data subcarriers (:func:`_groups`, :func:`_data_columns`)."""
    from rfbench.csi.subcarrier import resample_subcarriers

    groups = _groups(log)
    mapped = None
    for records, indices, bw in groups:
        cols, src = _data_columns(log, indices, bw)
        if src.size < 2:
            raise ValidationError(f"{where}: fewer than 2 data subcarriers; no grid to map from")
        part = resample_subcarriers(log.csi[records][:, cols], src, grid, axis=1, span=SPAN)
        if len(groups) == 1:
            mapped = part
            break
        if mapped is None:
            mapped = np.zeros((log.n_records, part.shape[1], *log.csi.shape[2:]), dtype=np.complex64)
        mapped[records] = part
    return np.ascontiguousarray(mapped, dtype=np.complex64)
