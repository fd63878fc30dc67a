"""A bfee record's fingerprint covers the bits the parser reads, not the payload's unused bits: a log copied with
only the 3 unused bits before each subcarrier group (and the tail bits up to calc_len) flipped parses to the same
CSI, and must hold the same records (it passed ``split --content`` and scored MEASURED when they were hashed)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

import naive
from rfbench.datasets.manifest import Manifest
from rfbench.io.intel5300 import read
from rfbench.io.writer import synthetic_log
from rfbench.protocols.content import audit_content, bfee_fingerprints


def _calc_len(nrx: int, ntx: int) -> int:
    return (30 * (nrx * ntx * 16 + 3) + 7) // 8


def _each_payload(data: bytes, change) -> bytes:
    """``data`` with ``change(b, payload, nrx, ntx)`` applied to every bfee record's payload in place (``b`` a
    bytearray of the log, ``payload`` the offset of the record's payload in it)."""
    b = bytearray(data)
    i = 0
    while i + 3 <= len(b):
        field_len = struct.unpack(">H", b[i:i + 2])[0]
        body = i + 3
        if b[i + 2] == 0xBB and field_len >= 21:
            change(b, body + 20, b[body + 8], b[body + 9])
        i = body + field_len - 1
    return bytes(b)


def _mutate(data: bytes, *, padding: bool = False, value_bit: int | None = None) -> bytes:
    """Every bfee record of ``data`` with its unused payload bits flipped (``padding``), or with payload bit
    ``value_bit`` of the first value of subcarrier 0 flipped (bit 3 + value_bit: inside a CSI value)."""
    def change(b, payload, nrx, ntx):
        step = 3 + 16 * nrx * ntx
        bits = []
        if padding:
            bits = [sc * step + k for sc in range(30) for k in range(3)]
            bits += list(range(30 * step, _calc_len(nrx, ntx) * 8))
        if value_bit is not None:
            bits.append(3 + value_bit)
        for bit in bits:
            b[payload + bit // 8] ^= 1 << (bit % 8)

    return _each_payload(data, change)


@pytest.mark.parametrize("shape", [(3, 1), (2, 3), (1, 1), (3, 3)])
def test_flipped_unused_bits_leave_the_csi_and_the_fingerprints_unchanged(shape):
    nrx, ntx = shape
    log = synthetic_log(6, nrx=nrx, ntx=ntx, seed=21)
    forged = _mutate(log, padding=True)
    assert forged != log
    a, f = read(log), read(forged)
    assert np.array_equal(a.csi, f.csi)  # the parser sees the same values
    fa, ff = bfee_fingerprints(log), bfee_fingerprints(forged)
    assert len(fa) == 6 and not fa.blank.any()
    assert fa.hashes.tolist() == ff.hashes.tolist()
    assert naive.naive_record_fingerprints(forged) == fa.hashes.tolist()


@pytest.mark.parametrize("value_bit", [0, 7, 8, 15])
def test_one_csi_value_changed_is_another_record(value_bit):
    log = synthetic_log(4, nrx=3, ntx=1, seed=22)
    changed = _mutate(log, value_bit=value_bit)
    assert not np.array_equal(read(log).csi, read(changed).csi)
    fa, fc = bfee_fingerprints(log), bfee_fingerprints(changed)
    assert all(x != y for x, y in zip(fa.hashes.tolist(), fc.hashes.tolist()))
    assert naive.naive_record_fingerprints(changed) == fc.hashes.tolist()


def _manifest(tmp_path: Path, files: dict[str, bytes], recordings: dict[str, list[str]]) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    for name, body in files.items():
        (data / name).write_bytes(body)
    recs = [{"id": rid, "files": [{"path": n, "bytes": len(files[n])} for n in names], "frames": 1}
            for rid, names in recordings.items()]
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(Manifest("toy", "data", recs).to_dict()))
    return path


def test_a_log_copied_with_its_unused_bits_flipped_is_a_content_leak(tmp_path):
    log = synthetic_log(8, nrx=3, ntx=1, seed=23)
    path = _manifest(tmp_path, {"a.dat": log, "b.dat": _mutate(log, padding=True),
                                "c.dat": _mutate(log, value_bit=4)}, {"a": ["a.dat"], "b": ["b.dat"], "c": ["c.dat"]})
    found = audit_content(path, ["a"], ["b"])
    assert not found.passed
    [leak] = found.leaks
    assert (leak["files"], leak["records"]) == (0, 8)
    # every record with one CSI value changed: nothing shared
    assert audit_content(path, ["a"], ["c"]).passed


# ---------------------------------------------------------------------------------------------------------
# Transforms that keep every amplitude: the same content (each value is fingerprinted by its magnitude)
# ---------------------------------------------------------------------------------------------------------

#: (real, imaginary) -> the copy's (real, imaginary): each keeps |value|, and so every amplitude a model is given
TRANSFORMS = {
    "swapped": lambda re, im: (im, re),
    "conjugated": lambda re, im: (re, -im),
    "real negated": lambda re, im: (-re, im),
    "negated": lambda re, im: (-re, -im),
    "times i": lambda re, im: (-im, re),
}


def _transform_values(data: bytes, fn) -> bytes:
    """Every bfee record of ``data`` with each CSI value (real, imaginary: the two signed bytes read_bfee.c reads
    at bit 3 + 16 * k of each subcarrier group) replaced by ``fn(real, imaginary)``, written back bit by bit."""
    def change(b, payload, nrx, ntx):
        nn, end = nrx * ntx, payload + _calc_len(nrx, ntx)
        bits = np.unpackbits(np.frombuffer(bytes(b[payload:end]), np.uint8), bitorder="little")
        for sc in range(30):
            for k in range(nn):
                at = sc * (3 + 16 * nn) + 3 + 16 * k
                re, im = (int(np.packbits(bits[at + o: at + o + 8], bitorder="little")[0]) for o in (0, 8))
                re, im = fn(re - 256 if re >= 128 else re, im - 256 if im >= 128 else im)
                for o, v in ((0, re), (8, im)):
                    bits[at + o: at + o + 8] = np.unpackbits(np.array([v & 0xFF], np.uint8), bitorder="little")
        b[payload:end] = np.packbits(bits, bitorder="little").tobytes()

    return _each_payload(data, change)


def _log_without_minus_128(n: int, nrx: int, ntx: int, seed: int) -> bytes:
    """A log whose values lie in -127..127, so that a negated copy is exact (-(-128) is not an int8)."""
    from rfbench.io.writer import LogBuilder

    rng = np.random.default_rng(seed)
    builder = LogBuilder()
    for t in range(n):
        builder.bfee(rng.integers(-127, 128, size=(30, nrx, ntx, 2)).astype(np.int8), timestamp_low=1000 * t)
    return builder.to_bytes()


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
@pytest.mark.parametrize("shape", [(3, 1), (2, 3)])
def test_a_copy_whose_values_keep_their_magnitudes_holds_the_same_records(name, shape):
    """A log copied with the real and imaginary parts of its values swapped (or conjugated, or a sign flipped)
    parses to other complex CSI but to the very same amplitudes — the windows of ``--features amp`` are
    bit-identical — and each record fingerprints alike (each hashed its payload's bits before)."""
    log = _log_without_minus_128(6, *shape, seed=31)
    copy = _transform_values(log, TRANSFORMS[name])
    a, c = read(log), read(copy)
    assert not np.array_equal(a.csi, c.csi) and np.array_equal(np.abs(a.csi), np.abs(c.csi))
    fa, fc = bfee_fingerprints(log), bfee_fingerprints(copy)
    assert not fa.blank.any()
    assert fa.hashes.tolist() == fc.hashes.tolist() == naive.naive_record_fingerprints(copy)
    # a value whose magnitude changes is other content: one value's real part moved by one
    one = _transform_values(log, lambda re, im: (re + (1 if re < 127 else -1), im))
    assert all(x != y for x, y in zip(fa.hashes.tolist(), bfee_fingerprints(one).hashes.tolist()))


def test_a_log_copied_with_its_values_swapped_is_a_content_leak(tmp_path):
    log = _log_without_minus_128(8, 3, 1, seed=32)
    path = _manifest(tmp_path, {"a.dat": log, "b.dat": _transform_values(log, TRANSFORMS["swapped"]),
                                "c.dat": _transform_values(log, TRANSFORMS["conjugated"])},
                     {"a": ["a.dat"], "b": ["b.dat"], "c": ["c.dat"]})
    for other in ("b", "c"):
        found = audit_content(path, ["a"], [other])
        assert not found.passed
        [leak] = found.leaks
        assert (leak["train"], leak["test"], leak["files"], leak["records"]) == ("a", other, 0, 8)


def test_an_esp32_log_copied_with_its_values_swapped_is_a_content_leak(tmp_path):
    """The same for a log of other hardware: an ESP32 log whose every (imaginary, real) pair is written the other
    way round reads as other complex CSI with the same amplitudes."""
    from rfbench.io.esp32 import read as read_esp32
    from rfbench.io.writer import make_hardware_log
    from rfbench.io.writer_settings import HardwareLogSettings

    data = tmp_path / "data"
    data.mkdir()
    make_hardware_log(data / "a.csv", HardwareLogSettings(format="esp32", seed=3, records=12))
    make_hardware_log(data / "other.csv", HardwareLogSettings(format="esp32", seed=4, records=12))
    lines = []
    for line in (data / "a.csv").read_text().splitlines():
        head, sep, rest = line.partition("[")
        if sep:
            v = rest.rstrip("] ").split()
            rest = " ".join(x for pair in zip(v[1::2], v[0::2]) for x in pair) + " ]"
        lines.append(head + sep + rest)
    (data / "b.csv").write_text("\n".join(lines) + "\n")
    a, b = read_esp32(data / "a.csv"), read_esp32(data / "b.csv")
    assert not np.array_equal(a.csi, b.csi) and np.array_equal(np.abs(a.csi), np.abs(b.csi))
    files = {n: (data / n).read_bytes() for n in ("a.csv", "b.csv", "other.csv")}
    recs = [{"id": n, "files": [{"path": n, "bytes": len(files[n])}], "frames": 1} for n in files]
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(Manifest("toy", "data", recs).to_dict()))
    found = audit_content(path, ["a.csv"], ["b.csv"])
    assert not found.passed
    [leak] = found.leaks
    assert (leak["files"], leak["records"]) == (0, 12)
    assert audit_content(path, ["a.csv"], ["other.csv"]).passed


@pytest.mark.parametrize("shape", [(3, 1), (3, 2), (3, 3)])  # (the reference's sum rule never permutes 2 rows)
def test_a_copy_with_its_antennas_stored_in_another_order_holds_the_same_records(tmp_path, shape):
    """The parser puts a record's receive antennas in the order ``antenna_sel`` gives: a log copied with each
    record's rows stored in another order and ``antenna_sel`` changed to match parses to the very same CSI, and
    passed split --content while the values were fingerprinted in the order stored."""
    from rfbench.io.writer import LogBuilder

    nrx, ntx = shape
    rng = np.random.default_rng(33)
    identity, reversed_ = 0 | 1 << 2 | 2 << 4, 2 | 1 << 2 | 0 << 4
    original, copy = LogBuilder(), LogBuilder()
    for t in range(5):
        csi = rng.integers(-100, 100, size=(30, nrx, ntx, 2)).astype(np.int8)
        original.bfee(csi, antenna_sel=identity, timestamp_low=t)
        copy.bfee(csi, antenna_sel=reversed_, timestamp_low=t)  # the same parsed CSI, its rows stored reversed
    a, c = original.to_bytes(), copy.to_bytes()
    assert a != c and np.array_equal(read(a).csi, read(c).csi) and read(c).perm_applied.all()
    fa, fc = bfee_fingerprints(a), bfee_fingerprints(c)
    assert fa.hashes.tolist() == fc.hashes.tolist() == naive.naive_record_fingerprints(c)
    path = _manifest(tmp_path, {"a.dat": a, "c.dat": c}, {"a": ["a.dat"], "c": ["c.dat"]})
    [leak] = audit_content(path, ["a"], ["c"]).leaks
    assert (leak["files"], leak["records"]) == (0, 5)
