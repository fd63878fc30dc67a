"""The MAT v5 reader's work on files of many tiny elements (one pass, a bounded element count, compressed
elements holding one variable each) and variables written twice; the BVP readers on such files."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest

from rfbench.errors import FormatError
from rfbench.io import matv5
from rfbench.io.matv5 import read_mat_bytes

scipy_io = pytest.importorskip("scipy.io")
#: The bound on the data elements one read parses (:data:`rfbench.io.matv5.MAX_MAT_ELEMENTS`).
CAP = 1 << 16


def _element(mi_type: int, payload: bytes) -> bytes:
    return struct.pack("<II", mi_type, len(payload)) + payload + b"\0" * ((-len(payload)) % 8)


def _compressed(inner: bytes) -> bytes:
    packed = zlib.compress(inner)
    return struct.pack("<II", 15, len(packed)) + packed


def _header() -> bytes:
    return b"MATLAB 5.0 MAT-file".ljust(116, b" ") + bytes(8) + struct.pack("<H", 0x0100) + b"IM"


def _matrix(name: bytes, dims: tuple, values: bytes, mi_type: int = 9, mx_class: int = 6, extra: bytes = b"") -> bytes:
    body = (_element(6, struct.pack("<II", mx_class, 0)) + _element(5, struct.pack(f"<{len(dims)}i", *dims))
            + _element(1, name) + _element(mi_type, values) + extra)
    return _element(14, body)


def _profile(t: int, value: float) -> bytes:
    return _matrix(b"velocity_spectrum_ro", (20, 20, t), struct.pack(f"<{400 * t}d", *[value] * (400 * t)))


@pytest.fixture
def inflations(monkeypatch):
    """How many compressed elements a read inflates (its work on a file of tiny compressed elements)."""
    calls = []
    real = matv5._inflate

    def counting(payload, budget, where):
        calls.append(len(payload))
        return real(payload, budget, where)

    monkeypatch.setattr(matv5, "_inflate", counting)
    return calls


def test_a_compressed_element_inflating_to_many_is_refused_after_one_inflation(inflations):
    # 8 KB: one compressed element whose stream is 20,000 empty compressed elements; read one by one, each
    # inflation re-queued, this was quadratic work (minutes at 262,000) for a file holding no variable at all
    blob = _header() + _compressed(_compressed(b"") * 20_000)
    with pytest.raises(FormatError, match="compressed element holding a data element of type 15, not a variable"):
        read_mat_bytes(blob, "bomb.mat")
    assert len(inflations) == 1


def test_a_variable_then_empty_compressed_elements_is_refused_at_the_first(inflations):
    blob = _header() + _compressed(_profile(5, 0.5)) + _compressed(b"") * 5_000
    with pytest.raises(FormatError, match="bomb.mat: a compressed element that inflates to no data element"):
        read_mat_bytes(blob, "bomb.mat")
    assert len(inflations) == 2


def test_a_file_of_more_elements_than_the_bound_is_refused_within_it(inflations):
    cap = CAP
    # tiny variables, each in its own compressed element (2 elements, + 4 sub-elements each): past the bound,
    # one FormatError, and no element past it is inflated
    n = cap // 6 + 10
    blob = _header() + b"".join(_compressed(_matrix(f"v{i}".encode(), (1, 1), struct.pack("<d", i)))
                                for i in range(n))
    with pytest.raises(FormatError, match=f"big.mat: more than {cap:,} data elements; not read further"):
        read_mat_bytes(blob, "big.mat")
    assert len(inflations) <= cap // 6 + 1
    # under the bound the same layout reads whole
    few = _header() + b"".join(_compressed(_matrix(f"v{i}".encode(), (1, 1), struct.pack("<d", i)))
                               for i in range(cap // 6 - 10))
    got = read_mat_bytes(few, "few.mat")
    assert len(got) == cap // 6 - 10 and got["v7"].tolist() == [[7.0]]


def test_the_bound_is_declared_once():
    assert matv5.MAX_MAT_ELEMENTS == CAP and "MAX_MAT_ELEMENTS" in matv5.__all__


def test_the_bound_counts_a_numeric_variables_sub_elements():
    cap = CAP
    padded = _matrix(b"x", (1, 1), struct.pack("<d", 2.0), extra=_element(1, b"") * cap)
    with pytest.raises(FormatError, match=f"more than {cap:,} data elements"):
        read_mat_bytes(_header() + padded)
    with pytest.raises(FormatError, match=f"more than {cap:,} data elements"):
        read_mat_bytes(_header() + _compressed(padded))


def test_a_skipped_variables_contents_are_not_parsed():
    # a cell (class 1) of many empty elements: skipped by its name and class, its contents not walked
    cell = _matrix(b"c", (1, 1), b"", mi_type=14, mx_class=1, extra=_element(14, b"") * (2 * CAP))
    got = read_mat_bytes(_header() + cell + _matrix(b"x", (1, 2), struct.pack("<2d", 1, 2)))
    assert got.skipped == {"c": "cell"} and got["x"].tolist() == [[1.0, 2.0]]


@pytest.mark.parametrize("layout", ["plain", "compressed", "one-stream"])
def test_a_variable_twice_is_refused(layout, tmp_path):
    a = _matrix(b"x", (1, 1), struct.pack("<d", 1.0))
    b = _matrix(b"x", (1, 1), struct.pack("<d", 2.0))
    blob = _header() + {"plain": a + b, "compressed": _compressed(a) + _compressed(b),
                        "one-stream": _compressed(a + b)}[layout]
    match = ("more than one data element" if layout == "one-stream"
             else "f.mat: variable 'x' appears twice; MATLAB writes each variable once")
    with pytest.raises(FormatError, match=match):
        read_mat_bytes(blob, "f.mat")
    (tmp_path / "f.mat").write_bytes(blob)
    if layout == "one-stream":  # the peer refuses it too
        with pytest.raises(Exception, match="consume compressed contents"):
            scipy_io.loadmat(tmp_path / "f.mat")


def test_a_variable_then_trailing_zeros_in_its_stream_still_reads():
    # padding after the matrix (fewer than 8 zero bytes) is not a second element
    inner = _matrix(b"x", (1, 1), struct.pack("<d", 3.0)) + b"\0" * 4
    got = read_mat_bytes(_header() + struct.pack("<II", 15, len(zlib.compress(inner))) + zlib.compress(inner))
    assert got["x"].tolist() == [[3.0]]


@pytest.mark.parametrize("compressed", [False, True])
def test_files_as_scipy_writes_them_read_in_file_order(tmp_path, compressed):
    path = tmp_path / "v.mat"
    values = {"b": np.arange(3.0), "a": np.eye(2), "t": "text", "c": np.int16([[1, -2]])}
    scipy_io.savemat(path, values, do_compression=compressed)
    got = read_mat_bytes(path.read_bytes())
    assert list(got) == ["b", "a", "c"] and got.skipped == {"t": "char"}
    assert got["a"].tolist() == [[1.0, 0.0], [0.0, 1.0]] and got["c"].dtype == np.int16


def test_bvp_two_profiles_in_one_stream_are_refused_with_what_is_wrong():
    from rfbench.datasets.bvp_mat import bvp_frames, read_bvp_bytes

    blob = _header() + _compressed(_profile(5, 0.25) + _profile(7, 0.75))
    with pytest.raises(FormatError, match="p.mat: a compressed element holding more than one data element"):
        read_bvp_bytes(blob, "p.mat")
    # the header-only path sees the first matrix's header, as its docstring says; the full read refuses the rest
    assert bvp_frames(blob, "p.mat") == 5
    # equal T and other values: refused too, never read as the second profile
    same = _header() + _compressed(_profile(5, 0.25) + _profile(5, 0.75))
    with pytest.raises(FormatError, match="more than one data element"):
        read_bvp_bytes(same, "p.mat")


@pytest.mark.parametrize("compressed", [False, True])
def test_bvp_a_profile_twice_is_refused_by_both_readers(compressed):
    from rfbench.datasets.bvp_mat import bvp_frames, read_bvp_bytes

    wrap = _compressed if compressed else (lambda m: m)
    blob = _header() + wrap(_profile(5, 0.25)) + wrap(_profile(7, 0.75))
    for read in (read_bvp_bytes, bvp_frames):
        with pytest.raises(FormatError, match="p.mat: variable 'velocity_spectrum_ro' appears twice"):
            read(blob, "p.mat")
