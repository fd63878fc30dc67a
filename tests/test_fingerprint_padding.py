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


def _mutate(data: bytes, *, padding: bool = False, value_bit: int | None = None) -> bytes:
    """Every bfee record of ``data`` with its unused payload bits flipped (``padding``), or with payload bit
    ``value_bit`` of the first value of subcarrier 0 flipped (bit 3 + value_bit: inside a CSI value)."""
    b = bytearray(data)
    i = 0
    while i + 3 <= len(b):
        field_len = struct.unpack(">H", b[i:i + 2])[0]
        body = i + 3
        if b[i + 2] == 0xBB and field_len >= 21:
            nrx, ntx = b[body + 8], b[body + 9]
            payload = body + 20
            step = 3 + 16 * nrx * ntx
            bits = []
            if padding:
                bits = [sc * step + k for sc in range(30) for k in range(3)]
                bits += list(range(30 * step, _calc_len(nrx, ntx) * 8))
            if value_bit is not None:
                bits.append(3 + value_bit)
            for bit in bits:
                b[payload + bit // 8] ^= 1 << (bit % 8)
        i = body + field_len - 1
    return bytes(b)


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
    # a log with no unused bit set hashes its payload as stored: XXH64 of the calc_len bytes, seeded by shape
    first = 3 + 20
    assert int(fa.hashes[0]) == naive.naive_xxh64(log[first:first + _calc_len(nrx, ntx)], (nrx - 1) * 3 + ntx - 1)


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
