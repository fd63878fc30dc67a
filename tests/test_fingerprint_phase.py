"""A copied training sample whose amplitudes changed but not its phases gives a model fed ``--features phase``
the same input: the content check knows each record and frame by its phases too.

Before these fingerprints, a log copied with every CSI value doubled (each value's phase kept exactly: the
``--features phase`` windows bit-identical), an MM-Fi frame copied with its ``CSIamp`` scaled and its
``CSIphase`` kept, and an ESP32 log copied with every value doubled, each passed ``split --content``."""

from __future__ import annotations

import json

import numpy as np
import pytest

import naive
from contentdata import toy_manifest
from rfbench.datasets.manifest import Manifest
from rfbench.datasets.synthetic import mat_v5_bytes
from rfbench.datasets.windows.features import features
from rfbench.io.intel5300 import read
from rfbench.io.writer import LogBuilder
from rfbench.protocols.content import audit_content, bfee_fingerprints
from rfbench.protocols.fingerprints import DIRECTIONS


def _log(values: list, antenna_sel: int = 0 | 1 << 2 | 2 << 4) -> bytes:
    builder = LogBuilder()
    for t, v in enumerate(values):
        builder.bfee(v, antenna_sel=antenna_sel, timestamp_low=1000 * t)
    return builder.to_bytes()


def _values(n: int, shape: tuple, seed: int, bound: int = 64) -> list:
    rng = np.random.default_rng(seed)
    return [rng.integers(-bound, bound, size=(30, *shape, 2)).astype(np.int8) for _ in range(n)]


def _phase_windows(data: bytes) -> np.ndarray:
    return features(read(data, raw_int8=True).csi_int8, ("phase",), "log")


def test_the_direction_table_is_the_reduced_pair():
    for re in range(-128, 128, 7):
        for im in range(-128, 128, 5):
            code = int(DIRECTIONS[(re & 0xFF) << 8 | (im & 0xFF)])
            r, i = code >> 8, code & 0xFF
            r, i = r - 256 if r >= 128 else r, i - 256 if i >= 128 else i
            if re == im == 0:
                assert (r, i) == (1, 0)
                continue
            assert np.gcd(r, i) == 1 and r * im == i * re and r * re + i * im > 0  # the same way, reduced


@pytest.mark.parametrize("shape", [(3, 1), (2, 3), (1, 1)])
def test_a_log_copied_with_its_values_scaled_holds_the_same_phases(shape):
    values = _values(6, shape, seed=41)
    log = _log(values)
    doubled = _log([v * 2 for v in values])
    rng = np.random.default_rng(42)
    each = _log([v * rng.integers(1, 2, size=v.shape[:-1] + (1,), endpoint=True).astype(np.int8) for v in values])
    fa = bfee_fingerprints(log)
    assert not fa.phase_blank.any()
    assert fa.phase_hashes.tolist() == naive.naive_record_phase_fingerprints(log)
    for copy in (doubled, each):
        # another amplitude everywhere (or somewhere), the very same phase windows
        assert not np.array_equal(np.abs(read(log).csi), np.abs(read(copy).csi))
        assert np.array_equal(_phase_windows(log), _phase_windows(copy))
        fc = bfee_fingerprints(copy)
        assert fc.hashes.tolist() != fa.hashes.tolist()
        assert fc.phase_hashes.tolist() == fa.phase_hashes.tolist() == naive.naive_record_phase_fingerprints(copy)


def test_a_record_s_phase_content_is_its_shape_and_directions():
    from rfbench.io.intel5300 import record_spans
    from rfbench.protocols.fingerprints import bfee_phase_content

    log = _log(_values(4, (2, 3), seed=50), antenna_sel=2 | 0 << 2 | 1 << 4)
    spans = record_spans(np.frombuffer(log, np.uint8))
    for k, codes in enumerate(naive.naive_record_directions(log)):
        body = log[int(spans.offsets[k]):int(spans.offsets[k] + spans.lengths[k])]
        assert bfee_phase_content(body) == bytes([2, 3]) + b"".join(c.to_bytes(2, "little") for c in codes)


def test_a_value_turned_is_another_phase_and_zero_points_as_a_positive_real():
    values = _values(3, (3, 1), seed=43)
    turned = [v.copy() for v in values]
    for v in turned:
        v[0, 0, 0] = (v[0, 0, 0, 1], -v[0, 0, 0, 0]) if v[0, 0, 0].any() else (1, 1)  # a quarter turn
    fa, ft = bfee_fingerprints(_log(values)), bfee_fingerprints(_log(turned))
    assert all(a != b for a, b in zip(fa.phase_hashes.tolist(), ft.phase_hashes.tolist()))
    zero, real = [v.copy() for v in values], [v.copy() for v in values]
    for z, r in zip(zero, real):
        z[0, 0, 0], r[0, 0, 0] = (0, 0), (5, 0)  # arctan2 gives both 0
    assert np.array_equal(_phase_windows(_log(zero)), _phase_windows(_log(real)))
    assert bfee_fingerprints(_log(zero)).phase_hashes.tolist() == bfee_fingerprints(_log(real)).phase_hashes.tolist()


def test_records_whose_values_all_point_one_way_have_no_phase_fingerprint():
    rng = np.random.default_rng(44)
    one_way = np.zeros((30, 3, 1, 2), np.int8)
    one_way[..., 0] = rng.integers(1, 100, size=(30, 3, 1))  # all positive reals: every phase 0
    fp = bfee_fingerprints(_log([one_way, np.zeros_like(one_way), _values(1, (3, 1), seed=45)[0]]))
    assert fp.phase_blank.tolist() == [True, True, False]
    assert fp.blank.tolist() == [False, True, False]  # (the amplitudes of the first still tell it)
    assert naive.naive_record_phase_fingerprints(_log([one_way]))[0] is None


def test_a_log_copied_with_its_values_doubled_is_a_content_leak(tmp_path):
    values = _values(8, (3, 1), seed=46)
    path = toy_manifest(tmp_path, {"a.dat": _log(values), "b.dat": _log([v * 2 for v in values]),
                                "c.dat": _log(_values(8, (3, 1), seed=47))},
                     {"a": ["a.dat"], "b": ["b.dat"], "c": ["c.dat"]})
    found = audit_content(path, ["a"], ["b"])
    assert not found.passed
    [leak] = found.leaks
    assert (leak["train"], leak["test"], leak["files"], leak["records"]) == ("a", "b", 0, 8)
    assert found.confirmations["record_phase_candidates"] == 16
    assert audit_content(path, ["a"], ["c"]).passed


def test_a_record_equal_by_amplitude_and_by_phase_counts_once(tmp_path):
    """A copy that keeps both (the very same values, a timestamp moved) is one shared record, not two."""
    values = _values(5, (3, 1), seed=48)
    moved = LogBuilder()
    for t, v in enumerate(values):
        moved.bfee(v, timestamp_low=77 + t)
    path = toy_manifest(tmp_path, {"a.dat": _log(values), "b.dat": moved.to_bytes()}, {"a": ["a.dat"], "b": ["b.dat"]})
    [leak] = audit_content(path, ["a"], ["b"]).leaks
    assert (leak["files"], leak["records"]) == (0, 5)


def test_an_mmfi_frame_copied_with_its_amplitudes_scaled_is_a_leak(tmp_path):
    rng = np.random.default_rng(49)
    amp, phase = rng.uniform(1, 30, size=(3, 114, 10)), rng.uniform(-np.pi, np.pi, size=(3, 114, 10))
    frames = {"f1.mat": mat_v5_bytes({"CSIamp": amp, "CSIphase": phase}),
              "f2.mat": mat_v5_bytes({"CSIamp": amp * 2, "CSIphase": phase}),
              "f3.mat": mat_v5_bytes({"CSIamp": amp * 2, "CSIphase": rng.uniform(-np.pi, np.pi, size=(3, 114, 10))}),
              "f4.mat": mat_v5_bytes({"CSIamp": amp * 3, "CSIphase": np.zeros((3, 114, 10))}),
              "f5.mat": mat_v5_bytes({"CSIamp": amp * 4, "CSIphase": np.zeros((3, 114, 10))})}
    kind = {n: {"kind": "wifi-frame", "frame": 1} for n in frames}
    path = toy_manifest(tmp_path, frames, {n[:2]: [n] for n in frames}, **kind)
    found = audit_content(path, ["f1"], ["f2"])
    [leak] = found.leaks
    assert (leak["files"], leak["frames"]) == (0, 1)
    assert found.confirmations["frame_phase_candidates"] == 2
    assert audit_content(path, ["f1"], ["f3"]).passed  # another phase, other amplitudes: another frame
    assert audit_content(path, ["f4"], ["f5"]).passed  # all-zero phases tell nothing


def test_an_esp32_log_copied_with_its_values_doubled_is_a_leak(tmp_path):
    from rfbench.io.esp32 import read as read_esp32
    from rfbench.io.writer import make_hardware_log
    from rfbench.io.writer_settings import HardwareLogSettings

    data = tmp_path / "data"
    data.mkdir()
    make_hardware_log(data / "a.csv", HardwareLogSettings(format="esp32", seed=5, records=10))
    lines = []
    for line in (data / "a.csv").read_text().splitlines():
        head, sep, rest = line.partition("[")
        if sep:
            rest = " ".join(str(2 * int(x)) for x in rest.rstrip("] ").split()) + " ]"
        lines.append(head + sep + rest)
    (data / "b.csv").write_text("\n".join(lines) + "\n")
    a, b = read_esp32(data / "a.csv"), read_esp32(data / "b.csv")
    assert np.array_equal(np.angle(a.csi), np.angle(b.csi)) and not np.array_equal(np.abs(a.csi), np.abs(b.csi))
    files = {n: (data / n).read_bytes() for n in ("a.csv", "b.csv")}
    recs = [{"id": n, "files": [{"path": n, "bytes": len(files[n])}], "frames": 1} for n in files]
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(Manifest("toy", "data", recs).to_dict()))
    [leak] = audit_content(path, ["a.csv"], ["b.csv"]).leaks
    assert (leak["files"], leak["records"]) == (0, 10)
