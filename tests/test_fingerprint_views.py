"""The content check fingerprints what ``windows`` gives a model under each of its settings, not only the logged
values: a hardware record as mapped to each subcarrier grid, an MM-Fi frame's amplitudes as the toolbox fill gives
them. Found by an adversarial probe: each copy below passed ``split --content``, scored MEASURED and verified
MATCH (the model's rows bit-identical to the training ones)."""

from __future__ import annotations

import numpy as np
import pytest

from contentdata import toy_manifest
from rfbench.datasets.mmfi import toolbox_fill
from rfbench.datasets.synthetic import mat_v5_bytes
from rfbench.datasets.windows.hardware import GRIDS, on_grid
from rfbench.io import atheros
from rfbench.protocols.content import audit_content
from rfbench.protocols.fingerprints import hardware_records, hardware_views

#: Data subcarriers of a 56-tone Atheros log that mapping onto the 30-point 20 MHz grid gives no weight.
_UNREAD_ON_30 = [-27, -25, -23, -21, -19, -17, -15, -13, -11, -9, -7, -5, -3, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22,
                 24, 26]
_TONES_56 = list(range(-28, 0)) + list(range(1, 29))


def _with_unread_changed(log: bytes) -> bytes:
    """An Atheros log (little-endian, 56 tones) with the 10-bit values of the subcarriers in ``_UNREAD_ON_30`` set
    to 8 in every record."""
    src = bytearray(log)
    off = 0
    while off < len(src):
        field_len = int.from_bytes(src[off:off + 2], "little")
        status = src[off + 2:off + 27]
        csi_len = int.from_bytes(status[8:10], "little")
        nr, nc = status[17], status[18]
        p = off + 27
        bits = np.unpackbits(np.frombuffer(bytes(src[p:p + csi_len]), np.uint8), bitorder="little")
        for k, sc in enumerate(_TONES_56):
            if sc in _UNREAD_ON_30:
                for j in range(nc * nr * 2):
                    at = (k * nc * nr * 2 + j) * 10
                    bits[at:at + 10] = 0
                    bits[at + 3] = 1
        src[p:p + csi_len] = np.packbits(bits, bitorder="little").tobytes()[:csi_len]
        off += 2 + field_len
    return bytes(src)


def test_an_atheros_log_copied_with_only_the_subcarriers_the_grid_never_reads_changed_is_a_leak(tmp_path):
    log = atheros.synthesize(np.random.default_rng(1), 12, nr=3, nc=1, tones=56)
    copy = _with_unread_changed(log)
    a, c = atheros.read(log), atheros.read(copy)
    assert not np.array_equal(a.csi, c.csi)
    # the model's rows: the very same on the default grid (30 subcarriers, 20 MHz), not on the others
    assert np.array_equal(on_grid(a, "intel30-20", "a"), on_grid(c, "intel30-20", "c"))
    assert not np.array_equal(on_grid(a, "ht20-56", "a"), on_grid(c, "ht20-56", "c"))
    other = atheros.synthesize(np.random.default_rng(2), 12, nr=3, nc=1, tones=56)
    path = toy_manifest(tmp_path, {"a.dat": log, "c.dat": copy, "o.dat": other},
                        {n: [n] for n in ("a.dat", "c.dat", "o.dat")})
    found = audit_content(path, ["a.dat"], ["c.dat"])
    [leak] = found.leaks
    assert (leak["files"], leak["records"]) == (0, 12)
    assert found.confirmations["record_grid_candidates"] == 24  # 12 records on one grid, both logs
    assert audit_content(path, ["a.dat"], ["o.dat"]).passed


def test_each_grid_view_is_the_feature_windows_computes():
    from rfbench.datasets.windows.features import features

    log = atheros.read(atheros.synthesize(np.random.default_rng(3), 4, nr=2, nc=2, tones=56))
    assert set(hardware_views()) == {"phase"} | {f"{g} {f}" for g in GRIDS for f in ("amp", "phase")}
    for grid in GRIDS:
        mapped = on_grid(log, grid, "log")
        for feature in ("amp", "phase"):
            records, status = hardware_records(log, f"{grid} {feature}")
            assert (status == 0).all()
            for r, (shape, values) in enumerate(records):
                want = features(mapped[r:r + 1], (feature,), "log").astype(np.float64).ravel()
                assert shape == (grid, feature, mapped.shape[1:]) and np.array_equal(values, want)


@pytest.mark.parametrize("copy_holds", ["+inf", "-inf", "the filled value"])
def test_an_mmfi_frame_copied_as_the_toolbox_fill_gives_it_is_a_leak(tmp_path, copy_holds):
    rng = np.random.default_rng(4)
    amp, phase = rng.uniform(1, 30, size=(3, 114, 10)), rng.uniform(-np.pi, np.pi, size=(3, 114, 10))
    amp[0, 0, 0] = np.nan
    copy = amp.copy()
    copy[0, 0, 0] = {"+inf": np.inf, "-inf": -np.inf, "the filled value": toolbox_fill(amp)[0][0, 0, 0]}[copy_holds]
    # what windows --features amp --nonfinite toolbox-fill gives a model: the same row (float32)
    assert np.array_equal(toolbox_fill(amp)[0].astype(np.float32), toolbox_fill(copy)[0].astype(np.float32))
    frames = {"f1.mat": mat_v5_bytes({"CSIamp": amp, "CSIphase": phase}),
              "f2.mat": mat_v5_bytes({"CSIamp": copy, "CSIphase": phase + 0.25}),
              "f3.mat": mat_v5_bytes({"CSIamp": rng.uniform(1, 30, size=(3, 114, 10)), "CSIphase": phase + 0.5})}
    path = toy_manifest(tmp_path, frames, {n: [n] for n in frames},
                        **{n: {"kind": "wifi-frame", "frame": 1} for n in frames})
    [leak] = audit_content(path, ["f1.mat"], ["f2.mat"]).leaks
    assert (leak["files"], leak["frames"]) == (0, 1)
    assert audit_content(path, ["f1.mat"], ["f3.mat"]).passed
