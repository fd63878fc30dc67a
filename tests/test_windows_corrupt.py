"""rfbench windows --corrupt: the CSI of each unit corrupted before its features, seeded per unit, recorded."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

import naive
from rfbench.csi.corruptions import generator
from rfbench.csi.subcarrier import GRIDS
from rfbench.datasets.windows import WindowSettings, build_windows, load_index, write_windows
from rfbench.errors import ValidationError
from rfbench.io import intel5300
from tests.windowsdata import mmfi_case, widar_case


@pytest.fixture(scope="module")
def mmfi(tmp_path_factory):
    return mmfi_case(tmp_path_factory.mktemp("mmfi-corrupt"), frames=3)


@pytest.fixture(scope="module")
def widar(tmp_path_factory):
    return widar_case(tmp_path_factory.mktemp("widar-corrupt"))


def _mmfi_csi(root, rid, number):
    """A frame's complex CSI amp·e^(j·phase), (10 packets, 114 subcarriers, 3 antennas, 1), from scipy's reading."""
    from scipy.io import loadmat

    mat = loadmat(root / rid / "wifi-csi" / f"frame{number:03d}.mat")
    csi = mat["CSIamp"].astype(np.float64) * np.exp(1j * mat["CSIphase"].astype(np.float64))
    return csi.transpose(2, 1, 0)[..., None]


def test_mmfi_noise_is_each_frames_complex_csi_plus_its_own_draws(mmfi):
    root, _, split = mmfi
    clean = build_windows(split, "test")
    w = build_windows(split, "test", WindowSettings(corrupt="noise:3", corrupt_seed=7))
    assert w.x.shape == clean.x.shape and w.index["rows"] == clean.index["rows"]
    assert w.index["settings"]["corrupt"] == "noise:3" and w.index["settings"]["corrupt_seed"] == 7
    assert any(n.startswith("corrupted: noise at severity 3 (SNR (dB) 10), seed 7") for n in w.index["notes"])
    for k in (0, len(w.index["rows"]) - 1):
        row = w.index["rows"][k]
        csi = _mmfi_csi(root, row["id"], row["start"] + 1)
        rng = generator(7, "noise", row["id"], f"frame {row['start'] + 1}")
        expected = naive.naive_noise(csi, rng.standard_normal((*csi.shape, 2)), 10.0)[..., 0].transpose(2, 1, 0)
        np.testing.assert_array_equal(w.x[k, 0, 0], np.abs(expected).astype(np.float32))
        np.testing.assert_array_equal(w.x[k, 0, 1], np.angle(expected).astype(np.float32))
        assert not np.array_equal(w.x[k], clean.x[k])


def test_mmfi_packet_loss_refills_each_frames_packets(mmfi):
    root, _, split = mmfi
    w = build_windows(split, "test", WindowSettings(corrupt="packet-loss:4", features="amp"))
    row = w.index["rows"][1]
    csi = _mmfi_csi(root, row["id"], row["start"] + 1)
    lost = generator(0, "packet-loss", row["id"], f"frame {row['start'] + 1}").random(10) < 0.5
    assert lost.any() and not lost.all()
    expected = np.abs(naive.naive_refill(csi, lost)[..., 0].transpose(2, 1, 0)).astype(np.float32)
    np.testing.assert_array_equal(w.x[1, 0, 0], expected)


def test_the_same_seed_gives_the_same_bits_whatever_the_threads(mmfi, widar):
    for split, corrupt, length in ((mmfi[2], "agc-jump:5", None), (widar[2], "burst-loss:3", 8)):
        s = WindowSettings(corrupt=corrupt, corrupt_seed=3, length=length)
        a = build_windows(split, "test", s, workers=1)
        b = build_windows(split, "test", s, workers=4)
        np.testing.assert_array_equal(a.x, b.x)
        c = build_windows(split, "test", WindowSettings(corrupt=corrupt, corrupt_seed=4, length=length), workers=1)
        assert not np.array_equal(a.x, c.x)


def test_intel_dead_antenna_and_phase_slope_act_on_each_receiver_log(widar):
    root, manifest, split = widar
    from rfbench.datasets.manifest import read_manifest

    recs = {r["id"]: r for r in read_manifest(manifest).recordings}
    clean = build_windows(split, "test", WindowSettings(length=8))
    dead = build_windows(split, "test", WindowSettings(length=8, corrupt="dead-antenna:5"))
    assert dead.index["rows"] == clean.index["rows"]
    # severity 5: one antenna of each receiver log carries nothing, the others are untouched (float64 |csi|)
    for k in (0, len(dead.index["rows"]) - 1):
        zero = np.all(dead.x[k] == 0, axis=(0, 1, 2, 4))
        assert zero.sum() == 1
        np.testing.assert_array_equal(dead.x[k][:, :, :, ~zero], clean.x[k][:, :, :, ~zero])
    slope = build_windows(split, "test", WindowSettings(length=8, features="phase", corrupt="phase-slope:2"))
    row = slope.index["rows"][3]
    (f,) = [f for f in recs[row["id"]]["files"] if f["receiver"] == row["receiver"]]
    csi = intel5300.read(root / f["path"]).csi.astype(np.complex128)
    tau = generator(0, "phase-slope", row["id"], f"receiver {row['receiver']}").uniform(-25e-9, 25e-9,
                                                                                        csi.shape[0])
    expected = naive.naive_phase_slope(csi, np.array(GRIDS["intel30-20"]), tau, 312_500.0)
    np.testing.assert_array_equal(slope.x[3, :, 0], np.angle(expected[row["start"]:row["stop"]]).astype(np.float32))


def test_corruption_settings_are_checked():
    with pytest.raises(ValidationError, match="corrupt_seed seeds a corruption"):
        WindowSettings(corrupt_seed=1).resolved("mmfi")
    with pytest.raises(ValidationError, match="unknown corruption"):
        WindowSettings(corrupt="fog:1")
    with pytest.raises(ValidationError, match="severity"):
        WindowSettings(corrupt="noise:9")
    with pytest.raises(ValidationError, match="toolbox fill"):
        WindowSettings(corrupt="noise:1", nonfinite="toolbox-fill").resolved("mmfi")
    assert WindowSettings(corrupt="noise:1").resolved("intel5300").corrupt_seed == 0
    assert WindowSettings(corrupt="noise:1", corrupt_seed=5).to_argv() == ["--corrupt", "noise:1",
                                                                           "--corrupt-seed", "5"]


def test_the_command_writes_and_records_a_corruption(widar, tmp_path):
    from rfbench.cli import app

    _, _, split = widar
    out = tmp_path / "w"
    result = CliRunner().invoke(app, ["windows", str(split), "--side", "test", "-o", str(out), "--corrupt",
                                      "truncation:2", "--corrupt-seed", "9", "--length", "8"])
    assert result.exit_code == 0, result.output
    idx = load_index(out / "index.json")
    assert idx.window_settings().corrupt == "truncation:2" and idx.window_settings().corrupt_seed == 9
    again = write_windows(split, "test", tmp_path / "w2", idx.window_settings())
    assert again["x"]["sha256"] == idx.doc["x"]["sha256"]
    bad = CliRunner().invoke(app, ["windows", str(split), "--side", "test", "-o", str(tmp_path / "x"),
                                   "--corrupt", "noise"])
    assert bad.exit_code == 2 and "ID:SEVERITY" in bad.output and not (tmp_path / "x").exists()


@pytest.mark.long
def test_a_corrupted_chain_verifies_and_an_edited_corruption_does_not(tiny_demo, tmp_path):
    """windows --corrupt → predict → score --rows on the demo's pose side: verify replays the corruption bit for
    bit (MATCH); the same files with the index's corruption changed to another severity are a MISMATCH."""
    import json
    import shutil
    import subprocess
    import sys

    d = tmp_path / "d"
    shutil.copytree(tiny_demo, d)

    def rfbench(*args):
        return subprocess.run([sys.executable, "-I", "-m", "rfbench", *map(str, args)], capture_output=True,
                              text=True, cwd=d, timeout=300)

    for step in (("windows", "mmfi-split.json", "--side", "test", "-o", "windows/noise", "--corrupt", "noise:3",
                  "--corrupt-seed", "1"),
                 ("predict", "pose/ridge.onnx", "--windows", "windows/noise", "-o", "pose/noise-pred.npy"),
                 ("score", "--task", "pose", "--pred", "pose/noise-pred.npy", "--rows", "windows/noise/index.json",
                  "--split", "mmfi-split.json", "--skeleton", "h36m17", "--units", "m", "--bootstrap", "50", "-o",
                  "pose/noise.json")):
        result = rfbench(*step)
        assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads((d / "pose" / "noise.json").read_text())
    assert "--corrupt" in report["chain"][0]["argv"]
    ok = rfbench("verify", "pose/noise.json", "--root", ".")
    assert ok.returncode == 0 and "MATCH" in ok.stdout, ok.stdout + ok.stderr
    index = d / "windows" / "noise" / "index.json"
    index.write_text(index.read_text().replace('"corrupt": "noise:3"', '"corrupt": "noise:4"'))
    bad = rfbench("verify", "pose/noise.json", "--root", ".")
    assert bad.returncode == 1 and "MISMATCH" in bad.stdout, bad.stdout + bad.stderr
