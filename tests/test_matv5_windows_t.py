"""``rfbench windows``' message when a BVP file's full read gives a T other than the manifest's: with the file's
sha256 matching the manifest's, the bytes are the ones ingest read, so it never says the dataset changed; and it
blames the file only when its header gives the manifest's T — else the manifest was edited (it blamed the file,
calling it damaged or forged, when a scored party had changed ``frames`` in the manifest: found by an adversarial
probe)."""

from __future__ import annotations

import hashlib
import struct

import pytest

from rfbench.errors import ValidationError


def _element(mi_type: int, payload: bytes) -> bytes:
    return struct.pack("<II", mi_type, len(payload)) + payload + b"\0" * ((-len(payload)) % 8)


def _header() -> bytes:
    return b"MATLAB 5.0 MAT-file".ljust(116, b" ") + bytes(8) + struct.pack("<H", 0x0100) + b"IM"


def _profile(t: int, value: float) -> bytes:
    body = (_element(6, struct.pack("<II", 6, 0)) + _element(5, struct.pack("<3i", 20, 20, t))
            + _element(1, b"velocity_spectrum_ro") + _element(9, struct.pack(f"<{400 * t}d", *[value] * (400 * t))))
    return _element(14, body)


def test_windows_t_mismatch_on_the_bytes_ingest_read_does_not_say_the_dataset_changed():
    from rfbench.datasets.windows.bvp import chunk_x

    blob = _header() + _profile(5, 0.5)  # its header and its contents both say T = 5
    entry = {"path": "BVP/a.mat", "bytes": len(blob), "sha256": hashlib.sha256(blob).hexdigest()}
    rec = {"id": "a", "frames": 6, "files": [entry]}  # the manifest's frames edited from 5 to 6
    with pytest.raises(ValidationError) as err:
        chunk_x([rec], 6, lambda e: blob)
    text = str(err.value)
    assert text.startswith("BVP/a.mat: T = 5, but the manifest records 6 for the same bytes (the sha256 matches) "
                           "and ingest takes 5 from them: the manifest was edited after ingest"), text
    assert "changed since ingest" not in text and "damaged or forged file" not in text
    # without a recorded sha256 the bytes may have changed: that advice stays
    bare = {"id": "a", "frames": 6, "files": [{"path": "BVP/a.mat", "bytes": len(blob)}]}
    with pytest.raises(ValidationError, match="changed since ingest; re-run rfbench ingest"):
        chunk_x([bare], 6, lambda e: blob)


def test_windows_blames_the_file_when_its_header_gives_the_manifest_s_t(monkeypatch):
    """The header read (ingest's) gives the recorded T and the whole read another: the file disagrees with itself."""
    from rfbench.datasets import bvp_mat
    from rfbench.datasets.windows.bvp import chunk_x

    blob = _header() + _profile(5, 0.5)
    monkeypatch.setattr(bvp_mat, "bvp_frames", lambda buf, where: 6)  # a header saying 6 over contents of 5
    entry = {"path": "BVP/a.mat", "bytes": len(blob), "sha256": hashlib.sha256(blob).hexdigest()}
    with pytest.raises(ValidationError, match="ingest recorded 6 from the same bytes .* MAT header and its contents "
                                              "disagree"):
        chunk_x([{"id": "a", "frames": 6, "files": [entry]}], 6, lambda e: blob)
