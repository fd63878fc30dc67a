"""A ``.npy`` header's declared length is checked against the bytes the file has left and against
:data:`rfbench.io.files.MAX_NPY_HEADER_BYTES` (NumPy's own default limit) before anything reads it: a 598-byte
file declaring a 4 GiB format-2.0 header was read with ``fh.read(4294967280)`` (a MemoryError under an
address-space limit), and a 65535-byte format-1.0 header gave NumPy's advice about options rfbench has not."""

from __future__ import annotations

import io
import struct

import numpy as np
import pytest

from rfbench.errors import FormatError
from rfbench.io.files import MAX_NPY_HEADER_BYTES, load_npy, parse_npy_header


def _npy(array: np.ndarray, version: tuple[int, int] = (1, 0)) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, array, version=version)
    return buf.getvalue()


class _CountingReader(io.BytesIO):
    """A stream that remembers the largest read asked of it."""

    largest = 0

    def read(self, size=-1):
        self.largest = max(self.largest, size if size is not None and size >= 0 else len(self.getvalue()))
        return super().read(size)


def test_the_limit_is_numpys_own():
    assert MAX_NPY_HEADER_BYTES == 10_000  # numpy.lib.format's default max_header_size


@pytest.mark.parametrize(("version", "length"), [((2, 0), 0xFFFFFFF0), ((2, 0), 10_001), ((1, 0), 65535),
                                                 ((1, 0), 5000)])  # past both; past the limit; past the file
def test_a_header_length_past_the_file_or_the_limit_is_one_line_and_never_read(version, length):
    good = _npy(np.arange(6.0), version)
    size_field = 2 if version == (1, 0) else 4
    forged = good[:8] + length.to_bytes(size_field, "little") + good[8 + size_field:]
    fh = _CountingReader(forged)
    with pytest.raises(FormatError) as err:
        parse_npy_header(fh, "pred.npy")
    message = str(err.value)
    assert message.startswith("pred.npy: ") and f"{length:,}" in message, message
    assert "max_header_size" not in message and "allow_pickle" not in message, message
    assert "\n" not in message
    assert fh.largest <= len(forged)  # no read sized by the forged field


def test_a_header_within_the_file_and_the_limit_is_read():
    arr = np.arange(6.0).reshape(2, 3)
    for version in ((1, 0), (2, 0)):
        fh = io.BytesIO(_npy(arr, version))
        assert parse_npy_header(fh, "a.npy") == ((2, 3), False, np.dtype("<f8"))


def test_a_long_but_honest_header_at_the_limit_is_read():
    # A 1.0 header padded to 10,000 bytes in all: 8 magic+version, 2 length, 9,990 of text.
    text = "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }"
    body = text.ljust(MAX_NPY_HEADER_BYTES - 10 - 1) + "\n"
    raw = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(body)) + body.encode("latin1") + np.arange(3.0).tobytes()
    shape, fortran, dtype = parse_npy_header(io.BytesIO(raw), "a.npy")
    assert (shape, fortran, dtype) == ((3,), False, np.dtype("<f8"))


def test_load_npy_says_the_same(tmp_path):
    good = _npy(np.arange(6.0), (2, 0))
    path = tmp_path / "v2_hlen.npy"
    path.write_bytes(good[:8] + struct.pack("<I", 0xFFFFFFF0) + good[12:])
    with pytest.raises(FormatError, match=r"v2_hlen\.npy: .*4,294,967,280"):
        load_npy(path, "--pred")
