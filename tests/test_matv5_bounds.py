"""The MAT v5 reader on untrusted files: bounded size and inflation, sizes checked before use, bytes input, and
error messages that never quote the file's bytes (issue 13)."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest

from rfbench.datasets.synthetic import mat_v5_bytes
from rfbench.errors import FormatError
from rfbench.io.matv5 import MAX_MAT_BYTES, read_mat, read_mat_bytes


def _element(mi_type: int, payload: bytes) -> bytes:
    return struct.pack("<II", mi_type, len(payload)) + payload + b"\0" * ((-len(payload)) % 8)


def _header() -> bytes:
    return b"MATLAB 5.0 MAT-file".ljust(116, b" ") + bytes(8) + struct.pack("<H", 0x0100) + b"IM"


def _matrix(name: bytes, dims: tuple, values: bytes, mi_type: int = 9) -> bytes:
    body = (_element(6, struct.pack("<II", 6, 0)) + _element(5, struct.pack(f"<{len(dims)}i", *dims))
            + _element(1, name) + _element(mi_type, values))
    return _element(14, body)


def test_bytes_and_paths_read_alike(tmp_path):
    blob = mat_v5_bytes({"CSIamp": np.arange(6.0).reshape(2, 3)})
    (tmp_path / "f.mat").write_bytes(blob)
    a, b = read_mat(blob), read_mat(tmp_path / "f.mat")
    assert np.array_equal(a["CSIamp"], b["CSIamp"]) and a["CSIamp"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert np.array_equal(read_mat(memoryview(blob))["CSIamp"], a["CSIamp"])


def test_inflation_stops_at_the_bound():
    # 4 MiB of zeros compressed to a few KB: with a 1 MiB bound, inflation stops there
    inner = _matrix(b"x", (1 << 19, 1), bytes(4 << 20))
    packed = zlib.compress(inner, 9)
    blob = _header() + _element(15, packed)
    with pytest.raises(FormatError, match="inflates past the 1,048,576-byte bound"):
        read_mat(blob, max_bytes=1 << 20)
    assert read_mat(blob, max_bytes=8 << 20)["x"].shape == (1 << 19, 1)


def test_the_bound_holds_for_many_elements_together():
    # two compressed elements of 600 KiB each: each is under 1 MiB, together they are not
    one = zlib.compress(_matrix(b"a", (600 * 128, 1), bytes(600 << 10)))
    two = zlib.compress(_matrix(b"b", (600 * 128, 1), bytes(600 << 10)))
    blob = _header() + _element(15, one) + _element(15, two)
    with pytest.raises(FormatError, match="inflates past"):
        read_mat(blob, max_bytes=1 << 20)
    assert set(read_mat(blob, max_bytes=2 << 20)) == {"a", "b"}


def test_a_file_past_the_bound_is_not_read(tmp_path):
    blob = mat_v5_bytes({"x": np.zeros(2000)})
    (tmp_path / "f.mat").write_bytes(blob)
    with pytest.raises(FormatError, match="more than the 1,000-byte limit"):
        read_mat(tmp_path / "f.mat", max_bytes=1000)
    with pytest.raises(FormatError, match="more than the 1,000-byte limit"):
        read_mat(blob, max_bytes=1000)
    assert MAX_MAT_BYTES == 256 << 20


def test_truncated_compressed_stream():
    packed = zlib.compress(_matrix(b"x", (4, 1), bytes(32)))
    with pytest.raises(FormatError, match="truncated compressed element"):
        read_mat(_header() + _element(15, packed[:-6]))


def test_huge_dimensions_are_checked_against_the_values_present():
    # dims 2**31-1 × 2**31-1 would be 2**62 values (their int64 product is fine, their float64 bytes are not):
    # the values present (4) are compared first, nothing is allocated from the dimensions
    blob = _header() + _matrix(b"x", (2**31 - 1, 2**31 - 1), struct.pack("<4d", 1, 2, 3, 4))
    with pytest.raises(FormatError, match="holds 4 values for dimensions"):
        read_mat(blob)
    # a product past int64 must not wrap around: 2**30 · 2**30 · 16 = 2**64 is 0 in int64, which an empty data
    # element would "match" before failing to take that shape
    blob = _header() + _matrix(b"x", (2**30, 2**30, 16), b"")
    with pytest.raises(FormatError, match="holds 0 values for dimensions"):
        read_mat(blob)


def test_messages_never_quote_arbitrary_bytes():
    secret = b"root:x:0:0:SECRET/bin/sh"
    blob = _header() + _matrix(secret, (3, 3), struct.pack("<2d", 1, 2))
    with pytest.raises(FormatError) as info:
        read_mat(blob)
    assert "SECRET" not in str(info.value) and "with an invalid name" in str(info.value)
    blob = _header() + _matrix(b"CSIamp", (3, 3), struct.pack("<2d", 1, 2))
    with pytest.raises(FormatError, match="variable 'CSIamp' holds 2 values"):
        read_mat(blob)


def _matrix_typed(flags: bytes, flags_type: int, dims: bytes, dims_type: int, values: bytes = b"") -> bytes:
    body = _element(flags_type, flags) + _element(dims_type, dims) + _element(1, b"v") + _element(9, values)
    return _element(14, body)


_NAN2 = struct.pack("<2d", float("nan"), 0.0)


@pytest.mark.parametrize("flags, flags_type, dims, dims_type", [
    (struct.pack("<II", 6, 0), 6, struct.pack("<3d", 20, 20, float("nan")), 9),  # int(nan): ValueError
    (struct.pack("<II", 6, 0), 6, struct.pack("<3d", 20, 20, float("inf")), 9),  # OverflowError
    (struct.pack("<II", 6, 0), 6, struct.pack("<3d", 0, 1e300, 20), 9),  # reshape: array is too big
    (struct.pack("<II", 6, 0), 6, struct.pack("<3q", 0, 2**62, 2**62), 12),  # int64 dims, 0 values
    (struct.pack("<II", 6, 0), 6, struct.pack("<3i", 0, 2**31 - 1, 2**31 - 1) + struct.pack("<i", 2**31 - 1), 5),
    (struct.pack("<II", 6, 0), 6, struct.pack("<100i", 0, *([1] * 99)), 5),  # > 64 dimensions
    (_NAN2, 9, struct.pack("<3i", 20, 20, 0), 5),  # flags stored as doubles, NaN
], ids=["dims-nan", "dims-inf", "dims-1e300", "dims-int64-huge", "dims-int32-product", "dims-100", "flags-nan"])
def test_dimensions_and_flags_that_are_no_matlab_array_are_one_error(flags, flags_type, dims, dims_type):
    """Dimensions and array flags stored as doubles (NaN, inf, 1e300), as 64-bit integers whose product overflows,
    or past 64 dimensions: int() and reshape raised ValueError / OverflowError, a traceback out of `rfbench ingest
    widar` (BVP) and `rfbench windows` (MM-Fi frames). They are one FormatError now."""
    blob = _header() + _matrix_typed(flags, flags_type, dims, dims_type)
    with pytest.raises(FormatError, match=r"^f\.mat: "):
        read_mat_bytes(blob, "f.mat")
