"""The MAT v5 reader against scipy.io (its peer), the synthetic writer, a hand-made big-endian file and
damaged files."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest

from rfbench.datasets.synthetic import mat_v5_bytes
from rfbench.errors import FormatError
from rfbench.io.matv5 import read_mat

scipy_io = pytest.importorskip("scipy.io")


def _variables():
    rng = np.random.default_rng(3)
    return {
        "CSIamp": rng.normal(size=(3, 114, 10)),
        "single": rng.normal(size=(4, 5)).astype(np.float32),
        "i16": np.arange(-3, 3, dtype=np.int16).reshape(2, 3),
        "u8": np.array([[0, 1, 255]], dtype=np.uint8),
        "i64": np.array([[-(2 ** 40), 2 ** 40]], dtype=np.int64),
        "cplx": (rng.normal(size=(2, 3)) + 1j * rng.normal(size=(2, 3))),
        "empty": np.zeros((0, 3)),
        "scalar": np.array(2.5),
        "text": "not numeric",
        "st": {"x": 1.0},
    }


@pytest.mark.parametrize("compressed", [False, True])
def test_matches_scipy_on_every_numeric_variable(tmp_path, compressed):
    path = tmp_path / "v.mat"
    scipy_io.savemat(path, _variables(), do_compression=compressed)
    ours, theirs = read_mat(path), scipy_io.loadmat(path)
    numeric = {"CSIamp", "single", "i16", "u8", "i64", "cplx", "empty", "scalar"}
    assert set(ours) == numeric
    assert ours.skipped == {"text": "char", "st": "struct"}
    for name in numeric:
        assert ours[name].dtype == theirs[name].dtype, name
        assert ours[name].shape == theirs[name].shape, name
        assert np.array_equal(ours[name], theirs[name]), name


def test_reads_the_synthetic_writer_exactly(tmp_path):
    amp = np.random.default_rng(0).normal(size=(3, 114, 10))
    path = tmp_path / "frame001.mat"
    path.write_bytes(mat_v5_bytes({"CSIamp": amp, "CSIphase": -amp}))
    got = read_mat(path)
    assert np.array_equal(got["CSIamp"], amp) and np.array_equal(got["CSIphase"], -amp)


def _big_endian_file() -> bytes:
    """A big-endian v5 file by hand: one 2x2 double matrix 'm' = [[1, 2], [3, 4]] (stored column-major:
    1, 3, 2, 4) plus a small-format name element."""
    def element(mi_type, payload):
        return struct.pack(">II", mi_type, len(payload)) + payload + b"\0" * ((-len(payload)) % 8)

    flags = element(6, struct.pack(">II", 6, 0))           # miUINT32, mxDOUBLE_CLASS
    dims = element(5, struct.pack(">ii", 2, 2))            # miINT32
    name = struct.pack(">HH", 1, 1) + b"m\0\0\0"           # small data element: size 1, miINT8, "m"
    real = element(9, struct.pack(">4d", 1.0, 3.0, 2.0, 4.0))
    body = flags + dims + name + real
    header = b"MATLAB 5.0 MAT-file, hand-made big-endian".ljust(116, b" ") + b"\0" * 8 + b"\x01\x00" + b"MI"
    return header + struct.pack(">II", 14, len(body)) + body


def test_big_endian_and_small_data_elements(tmp_path):
    path = tmp_path / "be.mat"
    path.write_bytes(_big_endian_file())
    m = read_mat(path)["m"]
    assert m.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert np.array_equal(m, scipy_io.loadmat(path)["m"])


def test_damaged_files_are_one_clear_error(tmp_path):
    good = tmp_path / "good.mat"
    scipy_io.savemat(good, {"a": np.arange(20.0)})
    data = good.read_bytes()
    cases = {
        "short.mat": (data[:100], "too short"),
        "truncated.mat": (data[:-12], "truncated"),
        "nomark.mat": (data[:126] + b"XX" + data[128:], "byte-order mark"),
        "v73.mat": (b"MATLAB 7.3 MAT-file".ljust(128, b" ") + b"\0" * 400 + b"\x89HDF\r\n\x1a\n", "v7.3"),
    }
    compressed = tmp_path / "c.mat"
    scipy_io.savemat(compressed, {"a": np.arange(20.0)}, do_compression=True)
    cdata = bytearray(compressed.read_bytes())
    cdata[140:150] = b"\xff" * 10  # inside the zlib stream
    cases["badzlib.mat"] = (bytes(cdata), "compressed")
    for name, (content, words) in cases.items():
        p = tmp_path / name
        p.write_bytes(content)
        with pytest.raises(FormatError, match=words):
            read_mat(p)


def test_compressed_element_holds_a_plain_matrix(tmp_path):
    # miCOMPRESSED (15) wrapping the miMATRIX of the synthetic writer: the reader inflates and recurses.
    raw = mat_v5_bytes({"x": np.array([[1.5, -2.0]])})
    inner = raw[128:]
    packed = zlib.compress(inner)
    path = tmp_path / "z.mat"
    path.write_bytes(raw[:128] + struct.pack("<II", 15, len(packed)) + packed)
    assert read_mat(path)["x"].tolist() == [[1.5, -2.0]]
