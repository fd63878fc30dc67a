"""A MAT v5 variable whose stored values its declared array class cannot hold (an integer class with NaN, an
out-of-range or fractional value stored as doubles, or a wider integer; a single with a double beyond its range)
is a FormatError naming the variable: never a silent cast, never a raw RuntimeWarning. The full reader, the
layout fast path (:class:`MatLayout`) and the BVP reader agree."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from rfbench.datasets.bvp_mat import read_bvp_bytes
from rfbench.errors import FormatError
from rfbench.io.matv5 import mat_layout, read_mat_bytes

# Array classes and data types (matfile_format.pdf, tables 1-1 and 1-3).
MX = {"double": 6, "single": 7, "int8": 8, "uint8": 9, "int16": 10, "int32": 12, "int64": 14, "uint64": 15}
MI = {"i1": 1, "i2": 3, "f8": 9, "u8": 13, "i8": 12}


def _element(mi_type: int, payload: bytes) -> bytes:
    return struct.pack("<II", mi_type, len(payload)) + payload + b"\0" * ((-len(payload)) % 8)


def _mat(name: str, mx_class: str, stored: str, values, dims=None, imag=None) -> bytes:
    """A little-endian v5 file holding one matrix of array class ``mx_class`` whose real part is ``values``
    stored as data type ``stored`` (and, with ``imag``, an imaginary part stored the same way)."""
    real = np.asarray(values, dtype="<" + stored)
    dims = dims or (1, real.size)
    flags = MX[mx_class] | (0x0800 if imag is not None else 0)
    body = (_element(6, struct.pack("<II", flags, 0)) + _element(5, struct.pack(f"<{len(dims)}i", *dims))
            + _element(1, name.encode("ascii")) + _element(MI[stored], real.tobytes()))
    if imag is not None:
        body += _element(MI[stored], np.asarray(imag, dtype="<" + stored).tobytes())
    header = b"MATLAB 5.0 MAT-file, hand-made".ljust(116, b" ") + b"\0" * 8 + b"\x00\x01" + b"IM"
    return header + struct.pack("<II", 14, len(body)) + body


@pytest.mark.parametrize(("mx_class", "stored", "values", "said"), [
    ("int8", "f8", [1.0, np.nan], "NaN"),
    ("int8", "f8", [np.inf, 1.0], "inf"),
    ("int8", "f8", [1.0, 1e300], "1e+300, outside int8's range -128 to 127"),
    ("int8", "f8", [-129.0], "-129, outside int8's range -128 to 127"),
    ("int8", "f8", [2.5], "2.5, not a whole number"),
    ("int8", "i2", [5, 300], "300, outside int8's range -128 to 127"),  # NumPy's cast would give 44
    ("uint8", "i1", [-1], "-1, outside uint8's range 0 to 255"),  # NumPy's cast would give 255
    ("int64", "f8", [2.0 ** 63], "9223372036854775808, outside int64's range"),  # float(int64 max) is 2**63
    ("uint64", "f8", [2.0 ** 64], "18446744073709551616, outside uint64's range"),
    ("int64", "u8", [2 ** 63], "9223372036854775808, outside int64's range"),
    ("single", "f8", [1.0, 1e300], "1e+300, outside single's range"),
])
def test_a_value_the_class_cannot_hold_is_an_error_naming_the_variable(mx_class, stored, values, said):
    buf = _mat("v", mx_class, stored, values)
    with pytest.raises(FormatError) as err:  # warnings are errors here: a RuntimeWarning would fail the test
        read_mat_bytes(buf, "f.mat")
    message = str(err.value)
    assert message.startswith(f"f.mat: variable 'v' is of class {mx_class} but stores "), message
    assert said in message, message
    assert "\n" not in message


def test_an_imaginary_part_the_class_cannot_hold_is_an_error():
    buf = _mat("z", "int16", "f8", [1.0, 2.0], imag=[3.0, np.nan])
    with pytest.raises(FormatError, match=r"variable 'z' is of class int16 but stores NaN in its imaginary part"):
        read_mat_bytes(buf, "f.mat")


@pytest.mark.parametrize(("mx_class", "stored", "values", "dtype"), [
    ("int8", "f8", [-128.0, -0.0, 127.0], np.int8),  # the class's whole range, a negative zero included
    ("int8", "i2", [-128, 0, 127], np.int8),
    ("int64", "f8", [-(2.0 ** 63), 2.0 ** 62], np.int64),  # -2**63 is int64's minimum, exactly a double
    ("uint8", "i1", [0, 127], np.uint8),
    ("single", "f8", [np.nan, -np.inf, 1.5], np.float32),  # single holds NaN and infinities
    ("double", "i1", [-3, 4], np.float64),  # MATLAB's compact storage of a double array
])
def test_values_the_class_holds_are_read_exactly(mx_class, stored, values, dtype):
    got = read_mat_bytes(_mat("v", mx_class, stored, values), "f.mat")["v"]
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, np.asarray(values, dtype=np.float64).astype(dtype).reshape(1, -1))


def test_the_layout_fast_path_hands_such_a_file_to_the_full_reader():
    good = _mat("v", "int8", "f8", [1.0, 2.0, 3.0])
    layout = mat_layout(good, "good.mat")
    assert layout is not None
    assert layout.read(good)["v"].tolist() == [[1, 2, 3]]
    bad = _mat("v", "int8", "f8", [1.0, np.nan, 3.0])  # same layout, one value int8 cannot hold
    assert layout.read(bad) is None  # old: [[1, 0, 3]] and a RuntimeWarning
    with pytest.raises(FormatError, match="variable 'v' is of class int8 but stores NaN"):
        read_mat_bytes(bad, "bad.mat")


def test_a_bvp_profile_of_an_integer_class_holding_nan_is_refused():
    values = np.arange(20 * 20 * 2, dtype=np.float64) % 100
    good = _mat("velocity_spectrum_ro", "int8", "f8", values, dims=(20, 20, 2))
    got = read_bvp_bytes(good, "p.mat")
    assert got.dtype == np.float64 and got.shape == (20, 20, 2)
    np.testing.assert_array_equal(got, values.reshape((20, 20, 2), order="F"))
    values[0], values[1] = np.nan, 1e300
    bad = _mat("velocity_spectrum_ro", "int8", "f8", values, dims=(20, 20, 2))
    with pytest.raises(FormatError, match=r"^p\.mat: variable 'velocity_spectrum_ro' is of class int8 but "
                                          r"stores NaN"):
        read_bvp_bytes(bad, "p.mat")
