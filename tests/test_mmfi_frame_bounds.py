"""MM-Fi WiFi frames are read within MAX_FRAME_BYTES wherever they are read (ingest, windows, content
fingerprints), and the MAT reader refuses an array whose values, widened to its class, would take more than the
read's byte budget: a small file of int8 values marked complex double must not cost 16 times its bytes."""

from __future__ import annotations

import struct
import sys
import zlib

import numpy as np
import pytest

import rfbench.io.matv5 as matv5
from rfbench.datasets import mmfi
from rfbench.datasets.mmfi import MAX_FRAME_BYTES
from rfbench.datasets.synthetic import make_mmfi_tree
from rfbench.datasets.windows import build_windows
from rfbench.errors import FormatError
from rfbench.protocols.content import audit_content
from tests.windowsdata import mmfi_case


def _element(mi_type: int, payload: bytes) -> bytes:
    return struct.pack("<II", mi_type, len(payload)) + payload + b"\0" * ((-len(payload)) % 8)


def _header() -> bytes:
    return b"MATLAB 5.0 MAT-file, crafted".ljust(116, b" ") + bytes(8) + struct.pack("<H", 0x0100) + b"IM"


def _matrix(name: bytes, dims: tuple, real: bytes, imag: bytes | None = None, mi_type: int = 1) -> bytes:
    """A double (class 6) matrix whose values are stored as ``mi_type`` (default miINT8), complex when ``imag``."""
    flags = 6 | (0x0800 if imag is not None else 0)
    body = (_element(6, struct.pack("<II", flags, 0)) + _element(5, struct.pack(f"<{len(dims)}i", *dims))
            + _element(1, name) + _element(mi_type, real) + (b"" if imag is None else _element(mi_type, imag)))
    return _element(14, body)


def _compressed(matrix: bytes) -> bytes:
    z = zlib.compress(matrix, 9)
    return struct.pack("<II", 15, len(z)) + z


# ---------------------------------------------------------------------------------------------------------
# The reader: the widened array is held to max_bytes
# ---------------------------------------------------------------------------------------------------------

def test_a_complex_double_stored_as_int8_past_the_budget_once_widened_is_refused():
    n = 1000  # 2,000 bytes stored, 16,000 bytes as complex128
    buf = _header() + _matrix(b"CSIamp", (n, 1), bytes(n), bytes(n))
    assert len(buf) < 4000
    with pytest.raises(FormatError, match=r"^<bytes>: variable 'CSIamp' .*16,000 bytes.*8,000-byte") as info:
        matv5.read_mat(buf, max_bytes=8000)
    assert "\n" not in str(info.value)


def test_a_real_double_stored_as_int8_past_the_budget_once_widened_is_refused():
    n = 2000  # 2,000 bytes stored, 16,000 bytes as float64
    buf = _header() + _compressed(_matrix(b"x", (1, n), bytes(n)))
    with pytest.raises(FormatError, match=r"variable 'x' .*16,000 bytes.*8,000-byte"):
        matv5.read_mat_bytes(buf, "f.mat", max_bytes=8000)


def test_an_array_exactly_at_the_budget_is_read():
    n = 500  # 500 complex128 values: 8,000 bytes
    real = np.arange(n, dtype=np.int64) % 100 - 50
    imag = (np.arange(n, dtype=np.int64) * 7) % 120 - 60
    buf = _header() + _matrix(b"z", (n, 1), real.astype(np.int8).tobytes(), imag.astype(np.int8).tobytes())
    z = matv5.read_mat(buf, max_bytes=8000)["z"]
    assert z.dtype == np.complex128 and z.shape == (n, 1)
    np.testing.assert_array_equal(z[:, 0].real, real.astype(float))
    np.testing.assert_array_equal(z[:, 0].imag, imag.astype(float))


def test_the_budget_covers_the_arrays_of_a_read_together():
    # Two variables, each 6,400 bytes as float64 (800 int8 values): each alone fits 8,000, both do not.
    buf = _header() + _matrix(b"a", (800, 1), bytes(800)) + _matrix(b"b", (800, 1), bytes(800))
    assert set(matv5.read_mat(buf, max_bytes=12800)) == {"a", "b"}
    with pytest.raises(FormatError, match=r"variable 'b' "):
        matv5.read_mat(buf, max_bytes=12799)


# ---------------------------------------------------------------------------------------------------------
# Every MM-Fi frame read passes MAX_FRAME_BYTES
# ---------------------------------------------------------------------------------------------------------

def _recording_budgets(monkeypatch, name: str, callers: tuple) -> list:
    """Wrap ``rfbench.io.matv5.<name>``: the (calling module, max_bytes) of each call made from ``callers``."""
    seen = []
    real = getattr(matv5, name)

    def wrapper(*args, **kwargs):
        caller = sys._getframe(1).f_globals.get("__name__")
        if caller in callers:
            seen.append((caller, kwargs.get("max_bytes", matv5.MAX_MAT_BYTES)))
        return real(*args, **kwargs)

    monkeypatch.setattr(matv5, name, wrapper)
    return seen


def test_windows_reads_each_frame_within_the_frame_bound(tmp_path, monkeypatch):
    _, _, split = mmfi_case(tmp_path, frames=3)
    seen = _recording_budgets(monkeypatch, "read_mat_bytes", ("rfbench.datasets.windows.build",))
    build_windows(split, "test")
    assert seen and {b for _, b in seen} == {4 << 20}


def test_windows_refuses_a_frame_inflating_past_the_frame_bound_before_widening_it(tmp_path):
    n = 3_000_000  # 6 MB of int8 zeros inflated: past 4 MiB, well within the 256 MiB default

    def craft(root):
        phase = _matrix(b"CSIphase", (3, 114, 10), bytes(8 * 3420), mi_type=9)
        frame = _header() + _compressed(_matrix(b"CSIamp", (n, 1), bytes(n), bytes(n))) + _compressed(phase)
        (root / "E01/S02/A01/wifi-csi/frame001.mat").write_bytes(frame)

    _, _, split = mmfi_case(tmp_path, frames=3, edit_tree=craft)
    with pytest.raises(FormatError, match=r"E01/S02/A01/wifi-csi/frame001\.mat: .*inflates past the 4,194,304-byte"):
        build_windows(split, "test")


def test_content_fingerprints_read_each_frame_within_the_frame_bound(tmp_path, monkeypatch):
    import shutil

    root = tmp_path / "m"
    make_mmfi_tree(root, seed=0, subjects=("S01", "S05"), actions=("A01", "A02"), frames=3, damage=False)
    shutil.copy(root / "E01/S01/A01/wifi-csi/frame002.mat", root / "E01/S05/A02/wifi-csi/frame003.mat")
    m = mmfi.ingest(root)
    seen = _recording_budgets(monkeypatch, "read_mat", ("rfbench.protocols.content_index",
                                                        "rfbench.protocols.content_matches"))
    train = [r["id"] for r in m.recordings if r["subject"] == "S01"]
    test = [r["id"] for r in m.recordings if r["subject"] == "S05"]
    found = audit_content(m, train, test)
    assert len(found.leaks) == 1  # the copied frame: confirmed by reading both files' arrays
    assert {c for c, _ in seen} == {"rfbench.protocols.content_index", "rfbench.protocols.content_matches"}
    assert {b for _, b in seen} == {MAX_FRAME_BYTES} == {4 << 20}
