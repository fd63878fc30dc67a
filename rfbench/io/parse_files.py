"""Parse many bfee logs to CSI archives, each input independent (DESIGN.md §3, §11).

The archive (``.npz``, plain arrays, no pickles) holds ``csi`` (records, 30, Nrx, Ntx) complex64 — or
``csi_int8`` (records, 30, Nrx, Ntx, 2) int8 — plus one array per header field (``timestamp_low``,
``bfee_count``, ``nrx``, ``ntx``, ``rssi_a``, ``rssi_b``, ``rssi_c``, ``noise``, ``agc``, ``antenna_sel``,
``rate``), ``perm`` (records, 3) 0-based, ``perm_applied`` (records,) bool, ``csi_scaled`` complex128 when
requested, and ``skipped_reasons``/``skipped_counts`` (the skip report) and ``non_csi_codes``/``non_csi_counts``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import numpy as np

from rfbench.errors import FormatError, OutputExistsError, RfbenchError, ValidationError
from rfbench.io import intel5300
from rfbench.io.files import check_writable, save_npz

__all__ = ["expand_inputs", "output_path", "parse_one", "archive_arrays"]


def expand_inputs(inputs: Iterable[Path]) -> list[tuple[Path, Path | None]]:
    """Turn files and folders into ``(input file, folder it was found under or None)`` pairs.

    Folders are searched recursively for ``*.dat`` files, in sorted order. A path that does not exist is
    kept, so that it is reported as a failed input while the others still run. A folder with no ``.dat``
    file is bad usage.
    """
    files: list[tuple[Path, Path | None]] = []
    for item in inputs:
        item = Path(item)
        if item.is_dir():
            found = sorted(p for p in item.rglob("*.dat") if p.is_file())
            if not found:
                raise ValidationError(f"{item}: folder holds no .dat file")
            files.extend((p, item) for p in found)
        else:
            files.append((item, None))
    if not files:
        raise ValidationError("no input given")
    return files


def output_path(path: Path, found_under: Path | None, out_dir: Path | None) -> Path:
    """Where the archive of ``path`` goes: ``<stem>.npz`` (``.dat`` replaced, other suffixes kept) beside the
    input, or under ``out_dir`` — mirroring the sub-folders of a folder input."""
    name = path.stem + ".npz" if path.suffix == ".dat" else path.name + ".npz"
    if out_dir is None:
        return path.with_name(name)
    if found_under is not None:
        return out_dir / path.relative_to(found_under).with_name(name)
    return out_dir / name


def archive_arrays(log: intel5300.Intel5300Log, scaled: bool = False) -> dict[str, np.ndarray]:
    """The arrays of a CSI archive for ``log`` (see the module docstring for the names)."""
    arrays: dict[str, np.ndarray] = {}
    if log.csi is not None:
        arrays["csi"] = log.csi
    else:
        arrays["csi_int8"] = log.csi_int8
    arrays.update(log.headers())
    if scaled:
        arrays["csi_scaled"] = log.scaled_csi()
    reasons = list(log.skipped)
    arrays["skipped_reasons"] = np.array(reasons, dtype="U16")
    arrays["skipped_counts"] = np.array([log.skipped[r] for r in reasons], dtype=np.int64)
    codes = sorted(log.non_csi)
    arrays["non_csi_codes"] = np.array(codes, dtype=np.uint8)
    arrays["non_csi_counts"] = np.array([log.non_csi[c] for c in codes], dtype=np.int64)
    return arrays


def parse_one(path: Path, found_under: Path | None = None, out_dir: Path | None = None, scaled: bool = False,
              raw_int8: bool = False, force: bool = False, outputs_seen: set | None = None) -> dict:
    """Parse one log and write its archive; never raises for a bad input.

    Returns ``{"input", "output", "error", "summary"}``: ``error`` is None on success, else one line saying
    why this input failed (missing, empty, unreadable, no valid bfee record, output exists...).
    """
    result = {"input": str(path), "output": None, "error": None, "summary": None}
    target = output_path(path, found_under, out_dir)
    try:
        if outputs_seen is not None:
            if target in outputs_seen:
                raise OutputExistsError(f"output {target} would also be written by another input")
            outputs_seen.add(target)
        if not path.exists():
            raise FormatError("no such file")
        if path.is_dir():
            raise FormatError("is a directory")
        if path.stat().st_size == 0:
            raise FormatError("empty file (0 bytes)")
        check_writable(target, force)
        log = intel5300.read(path, raw_int8=raw_int8)
        result["summary"] = log.summary()
        if log.n_records == 0:
            bad = ", ".join(f"{k} {v}" for k, v in log.skipped.items() if v)
            raise FormatError(
                "no valid Intel 5300 CSI record (bfee, code 0xBB) found"
                + (f"; skipped: {bad}" if bad else "")
                + (f"; non-CSI records: {sum(log.non_csi.values())}" if log.non_csi else "")
            )
        save_npz(target, archive_arrays(log, scaled), force=force)
        result["output"] = str(target)
    except RfbenchError as exc:
        result["error"] = str(exc)
    except OSError as exc:
        result["error"] = f"cannot read or write ({exc.strerror or exc})"
    return result
