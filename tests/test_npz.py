"""The stored-zip .npz encoder against numpy.save / numpy.savez / zipfile (the peers define the format)."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

from rfbench.io import npz
from rfbench.io.npz import ArchiveTooLarge, npy_header, npz_buffers

ARRAYS = {
    "csi": (np.arange(2 * 30 * 3 * 2, dtype=np.float32) - 90).view(np.complex64).reshape(2, 30, 3, 1),
    "timestamp_low": np.array([1, 2**32 - 1], dtype=np.uint32),
    "noise": np.array([-127, 3], dtype=np.int8),
    "perm": np.array([[0, 1, 2], [2, 0, 1]], dtype=np.int8),
    "perm_applied": np.array([True, False]),
    "skipped_reasons": np.array(["truncated", "invalid_perm"], dtype="U16"),
    "non_csi_codes": np.zeros(0, dtype=np.uint8),
    "source_sha256": np.array("ab" * 32),
    "source_bytes": np.array(1234, dtype=np.int64),
    "empty_3d": np.zeros((0, 30, 3), dtype=np.complex128),
    "big_first_axis": np.zeros((123456789012, 0), dtype=np.uint8),
}


def _bytes(arrays) -> bytes:
    buffers, size = npz_buffers(arrays)
    data = b"".join(bytes(b) for b in buffers)
    assert len(data) == size
    return data


@pytest.mark.parametrize("name", list(ARRAYS))
def test_each_member_is_what_numpy_save_writes(name):
    expected = io.BytesIO()
    np.save(expected, ARRAYS[name], allow_pickle=False)
    with zipfile.ZipFile(io.BytesIO(_bytes({name: ARRAYS[name]}))) as zf:
        assert zf.namelist() == [f"{name}.npy"]
        assert zf.read(f"{name}.npy") == expected.getvalue()
        assert zf.getinfo(f"{name}.npy").compress_type == zipfile.ZIP_STORED


def test_archive_passes_zipfile_crc_check_and_loads_like_savez():
    data = _bytes(ARRAYS)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert zf.testzip() is None  # every member's CRC-32 checked against its bytes
    reference = io.BytesIO()
    np.savez(reference, **ARRAYS)
    reference.seek(0)
    with np.load(io.BytesIO(data), allow_pickle=False) as ours, np.load(reference, allow_pickle=False) as theirs:
        assert ours.files == theirs.files == list(ARRAYS)
        for key in ARRAYS:
            assert ours[key].dtype == theirs[key].dtype and ours[key].shape == theirs[key].shape, key
            np.testing.assert_array_equal(ours[key], theirs[key])


def test_a_corrupted_member_is_caught_by_its_crc():
    data = bytearray(_bytes({"csi": ARRAYS["csi"]}))
    data[200] ^= 0x01  # inside the csi data (the local header and .npy header take the first 128 bytes)
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as zf:
        assert zf.testzip() == "csi.npy"


def test_same_arrays_give_the_same_bytes_and_non_contiguous_input_is_written_in_c_order():
    a = np.arange(24, dtype=np.int16).reshape(4, 6)
    assert _bytes({"a": a}) == _bytes({"a": a.copy()})
    with np.load(io.BytesIO(_bytes({"t": a.T, "s": a[:, ::2]}))) as z:
        np.testing.assert_array_equal(z["t"], a.T)
        np.testing.assert_array_equal(z["s"], a[:, ::2])


def test_npy_header_matches_numpy_for_many_shapes():
    for shape in [(), (0,), (1,), (7,), (10**15,), (3, 30, 3, 3), (1, 2, 3, 4, 5, 6)]:
        arr = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), shape=shape, strides=(0,) * len(shape))
        expected = io.BytesIO()
        np.lib.format.write_array_header_1_0(expected, np.lib.format.header_data_from_array_1_0(arr))
        assert npy_header(arr) == expected.getvalue(), shape


def test_object_arrays_and_zip64_sizes_are_refused(monkeypatch):
    with pytest.raises(ValueError, match="object"):
        npz_buffers({"o": np.array([object()])})
    with pytest.raises(ArchiveTooLarge):
        npz_buffers({f"m{i}": np.zeros(0) for i in range(0x10000)})
    monkeypatch.setattr(npz, "ZIP32_LIMIT", 4096)  # stands for 4 GiB
    with pytest.raises(ArchiveTooLarge):
        npz_buffers({"big": np.zeros(1000)})
    with pytest.raises(ArchiveTooLarge):
        npz_buffers({f"m{i}": np.zeros(100) for i in range(8)})  # each member fits, the offsets do not


def test_the_crc_in_use_is_zlibs_crc32():
    import zlib

    rng = np.random.default_rng(3)
    for n in [0, 1, 7, 64, 5000, 1 << 20]:
        data = rng.integers(0, 256, n, dtype=np.uint8)
        assert npz._crc32(data) == zlib.crc32(data)
        assert npz._crc32(data, 0x12345678) == zlib.crc32(data, 0x12345678)


def _zipfile_archive(arrays) -> bytes:
    """The same archive written by the standard library: zipfile's stored members holding numpy.save's bytes,
    with the fixed date, Unix origin and rw-r--r-- attributes npz_buffers documents."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        for name, array in arrays.items():
            member = io.BytesIO()
            np.save(member, array, allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.create_system = 3
            info.external_attr = 0o100644 << 16
            zf.writestr(info, member.getvalue())
    return out.getvalue()


def test_archives_are_byte_for_byte_what_zipfile_and_numpy_save_write():
    """The standard library is the reference for the zip framing, numpy.save for each member; archives of the
    kind a parse job writes, one after another with the same shapes and new values, as it writes them."""
    rng = np.random.default_rng(11)

    def parse_like(n):
        return {"csi": rng.standard_normal((n, 30, 3, 1)).astype(np.complex64),
                "timestamp_low": rng.integers(0, 2**32, n, dtype=np.uint32),
                "rssi_a": rng.integers(0, 256, n, dtype=np.uint8),
                "perm": rng.integers(0, 3, (n, 3), dtype=np.int8),
                "big_middle": rng.integers(0, 256, (1 << 16) + 1, dtype=np.uint8),
                "perm_applied": rng.integers(0, 2, n).astype(bool),
                "skipped_reasons": np.array(["truncated", "bad_len"], dtype="U16"),
                "source_sha256": np.array(rng.bytes(32).hex()),
                "source_bytes": np.array(int(rng.integers(1, 10**9)), dtype=np.int64),
                "strided": rng.standard_normal((n, 6))[:, ::2]}  # not contiguous: written in C order, as numpy does

    for n in (1119, 1119, 3, 1119, 0):
        arrays = parse_like(n)
        assert _bytes(arrays) == _zipfile_archive(arrays), n
    for name in ARRAYS:
        assert _bytes({name: ARRAYS[name]}) == _zipfile_archive({name: ARRAYS[name]}), name
